"""What a model's reply must look like, as text: the JSON inside it, a validation error told
back to the model, a schema's name. Pure functions (the gateway's; kept apart from the SDK)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from engine.domain import Usage

REASK_ERROR_CHARS = 1000
SHOWN_VALUE_CHARS = 60
#: errors whose input is not one value the reply wrote (the whole reply, or nothing)
_NO_VALUE = frozenset({"missing", "json_invalid", "json_type"})
JSON_ONLY = "Reply with one JSON object only: no prose, no markdown, no code fences."

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_SCHEMA_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


#: a reasoning model's thoughts written into the reply (DeepSeek-R1, Qwen3 on Ollama, vLLM or
#: llama.cpp): `<think>…</think>`, or an unclosed one cut by the cap
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I)


def without_thoughts(text: str) -> str:
    """`text` without the `<think>` blocks some local models write before their answer."""
    return _THINK.sub("", text) if "<" in text else text


def extract_json(text: str) -> str:
    """The JSON object inside a reply: without thoughts, markdown fences and prose around it."""
    text = without_thoughts(text)
    fenced = _FENCE.search(text)
    if fenced is not None:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return text[start : end + 1]
    return text.strip()


def describe_validation_error(exc: ValidationError) -> str:
    """A short, model-readable account of what was wrong with a reply: each field, the rule it
    broke (a range, a missing key, a type) and, for a single value, what the reply wrote
    ("strength: Input should be less than or equal to 10 (got 11)")."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "<root>"
        got = error.get("input")
        wrote = ""
        if error["type"] not in _NO_VALUE and isinstance(got, str | int | float | bool):
            shown = repr(got)
            if len(shown) > SHOWN_VALUE_CHARS:
                shown = shown[:SHOWN_VALUE_CHARS] + "…"
            wrote = f" (got {shown})"
        parts.append(f"{where}: {error['msg']}{wrote}")
    return "; ".join(parts)[:REASK_ERROR_CHARS]


def schema_name(schema: type[Any]) -> str:
    return _SCHEMA_NAME_BAD_CHARS.sub("_", schema.__name__)[:64] or "reply"


# --- the portable schema: what every strict-mode provider accepts ---------------------------

#: keywords some strict-mode providers refuse; lengths are asked for in the prompt instead, and
#: numeric ranges travel in the description (and are still checked when the reply is validated)
_DROPPED_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minimum",
                               "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                               "pattern", "format", "minProperties", "maxProperties", "default",
                               "title"})


def portable_schema(schema: Any) -> Any:
    """`schema` without length, numeric and format keywords; a numeric range the schema had is
    said in its description (unless the description already gives both ends)."""
    if isinstance(schema, list):
        return [portable_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYWORDS and not isinstance(value, dict):
            continue
        if key in ("properties", "$defs", "definitions"):
            out[key] = {name: portable_schema(sub) for name, sub in value.items()}
        else:
            out[key] = portable_schema(value)
    said = _range_words(schema)
    if said:
        described = str(out.get("description", ""))
        ends = [str(schema.get(k)) for k in ("minimum", "maximum") if k in schema]
        if not all(_mentions(described, end) for end in ends):
            out["description"] = f"{described} ({said})".strip() if described else said
    return out


def _range_words(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    kind = "an integer" if schema.get("type") == "integer" else "a number"
    if low is not None and high is not None:
        return f"{kind} from {_num(low)} to {_num(high)}"
    if low is not None:
        return f"{kind} of at least {_num(low)}"
    if high is not None:
        return f"{kind} of at most {_num(high)}"
    return ""


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _mentions(text: str, number: str) -> bool:
    number = number.removesuffix(".0")
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text) is not None


def reported_usage(reported: Any) -> Usage:
    """The usage a reply reports (the SDK's CompletionUsage, or None), with its cached
    prompt tokens (OpenAI's details, or DeepSeek's `prompt_cache_hit_tokens`), its reasoning
    tokens (every billed token counted: `total_tokens - prompt_tokens` when that exceeds
    `completion_tokens`), and the cost a gateway reported."""
    if reported is None:
        return Usage()
    prompt = reported.prompt_tokens_details
    completion = reported.completion_tokens_details
    cached = (prompt.cached_tokens if prompt is not None else None) or 0
    if not cached and reported.model_extra:
        cached = int(reported.model_extra.get("prompt_cache_hit_tokens") or 0)
    reasoning = (completion.reasoning_tokens if completion is not None else None) or 0
    output = reported.completion_tokens
    unlisted = (reported.total_tokens or 0) - reported.prompt_tokens - output
    if unlisted > 0:   # Gemini: thoughts billed as output, counted only in total_tokens
        output += unlisted
        reasoning += unlisted
    return Usage(prompt_tokens=reported.prompt_tokens, completion_tokens=output,
                 cached_tokens=min(cached, reported.prompt_tokens),
                 reasoning_tokens=min(reasoning, output), cost_usd=_gateway_cost(reported))


def _gateway_cost(reported: Any) -> float | None:
    """What a gateway says the reply cost (OpenRouter's and LiteLLM's `usage.cost`, in USD)."""
    cost = (reported.model_extra or {}).get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None
