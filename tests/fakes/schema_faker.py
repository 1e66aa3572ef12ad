"""Replies generated from a request's JSON schema (or one quoted in the system prompt): the
"minimal" fake model, a short valid instance per schema, which the realistic one extends."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from tests.fakes.chat_requests import Body, last_text

HINT_CHARS = 40


class SchemaFaker:
    """A minimal valid instance of a JSON schema (the subset pydantic and strict mode produce)."""

    def __init__(self, root: Body, *, hint: str, rng: random.Random) -> None:
        self._root = root
        self._hint = hint[:HINT_CHARS]
        self._rng = rng

    def make(self, schema: Body | None = None, name: str = "value") -> Any:
        schema = self._root if schema is None else self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return self._rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf", "allOf"):
            if schema.get(key):
                options = [s for s in schema[key] if self._resolve(s).get("type") != "null"]
                return self.make((options or schema[key])[0], name)
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        return self._by_type(kind, schema, name)

    def _by_type(self, kind: str, schema: Body, name: str) -> Any:
        if kind == "object":
            props = schema.get("properties", {})
            required = schema.get("required", list(props))
            return {key: self.make(props.get(key, {}), key) for key in required}
        if kind == "array":
            low, high = schema.get("minItems", 1), schema.get("maxItems", 2)
            count = max(low, min(high, self._rng.randint(1, 2)))
            item_name = name[:-1] if name.endswith("s") else name
            return [self.make(schema.get("items", {}), item_name) for _ in range(count)]
        if kind == "integer":
            return self._integer(schema)
        if kind == "number":
            return self._number(schema)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema, name)

    def _resolve(self, schema: Body) -> Body:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part]
        return self._resolve(node)

    def _integer(self, schema: Body) -> int:
        low, high = _bounds(schema, default_span=10.0, step=1.0)
        return self._rng.randint(int(low), int(high))

    def _number(self, schema: Body) -> float:
        low, high = _bounds(schema, default_span=10.0, step=0.0)
        exclusive = "exclusiveMinimum" in schema or "exclusiveMaximum" in schema
        if exclusive:
            return (low + high) / 2  # strictly inside the open interval
        return min(max(round(self._rng.uniform(low, high), 2), low), high)

    def _string(self, schema: Body, name: str) -> str:
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2024-01-01T00:00:00Z"
        if fmt == "date":
            return "2024-01-01"
        if fmt in ("uri", "url"):
            return "https://example.com/fake"
        text = f"fake {name} for {self._hint}".strip()
        text = text.ljust(int(schema.get("minLength", 0)), ".")
        return text[: int(schema["maxLength"])] if "maxLength" in schema else text


_DESCRIBED_RANGE = re.compile(r"from (-?\d+(?:\.\d+)?) to (-?\d+(?:\.\d+)?)")


def _bounds(schema: Body, *, default_span: float, step: float) -> tuple[float, float]:
    """The inclusive range a number may take; `step` turns exclusive integer bounds inclusive."""
    low = schema.get("minimum")
    high = schema.get("maximum")
    said = _DESCRIBED_RANGE.search(str(schema.get("description", "")))
    if low is None and high is None and said is not None:  # a portable schema says it in words
        low, high = float(said.group(1)), float(said.group(2))
    if low is None and "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"] + step
    if high is None and "exclusiveMaximum" in schema:
        high = schema["exclusiveMaximum"] - step
    if low is None:
        low = 0.0 if high is None or high >= 0 else high - default_span
    if high is None:
        high = low + default_span
    return float(low), float(max(low, high))


def schema_in_text(text: str) -> Body | None:
    """The first JSON object quoted in `text` that looks like a JSON schema."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and ("properties" in value or "type" in value):
            return value
        start = text.find("{", start + 1)
    return None


def request_schema(body: Body) -> Body | None:
    """The schema a request asks for: `response_format.json_schema`, else one in the prompt."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            return schema
    return schema_in_text(last_text(body, "system"))
