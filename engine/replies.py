"""What a model's reply must look like, as text: the JSON inside it, a validation error told
back to the model, a schema's name. Pure functions (the gateway's; kept apart from the SDK)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

REASK_ERROR_CHARS = 1000
JSON_ONLY = "Reply with one JSON object only: no prose, no markdown, no code fences."

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_SCHEMA_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def extract_json(text: str) -> str:
    """The JSON object inside a reply: without markdown fences and prose around it."""
    fenced = _FENCE.search(text)
    if fenced is not None:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return text[start : end + 1]
    return text.strip()


def describe_validation_error(exc: ValidationError) -> str:
    """A short, model-readable account of what was wrong with a reply."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "<root>"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)[:REASK_ERROR_CHARS]


def schema_name(schema: type[Any]) -> str:
    return _SCHEMA_NAME_BAD_CHARS.sub("_", schema.__name__)[:64] or "reply"
