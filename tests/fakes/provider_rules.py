"""What each model family and provider accepts, and how it answers, in one place (as pydantic-ai
keeps model profiles): OpenAI's reasoning models by name, DeepSeek's response formats, the
providers' 400 bodies word for word, the snapshot names the real API answers with.

Sources: OpenAI's reasoning-model guide (sampling parameters and `max_tokens` refused,
`reasoning_effort`, reasoning tokens billed as output), its JSON-mode rule (the word "json" in the
messages), DeepSeek's JSON-output guide (`json_object` only) and its context-caching guide.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from tests.fakes.chat_requests import Body, message_text

Provider = Literal["openai", "deepseek"]
PROVIDERS: tuple[str, ...] = get_args(Provider)

_REASONING = re.compile(r"^(o\d|gpt-5)")
_CHAT_ALIASES = frozenset({"gpt-5-chat-latest"})  # a gpt-5 name that behaves like gpt-4o
_NONE_EFFORT = re.compile(r"^gpt-5\.(\d+)")  # gpt-5.1 and later also take "none"
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")
DEFAULT_EFFORT = "medium"
#: hidden reasoning tokens a reply spends, drawn per request, by effort
REASONING_TOKENS: dict[str, tuple[int, int]] = {
    "none": (0, 0),
    "minimal": (0, 64),
    "low": (100, 600),
    "medium": (400, 2_500),
    "high": (1_500, 6_000),
}
#: sampling parameters a reasoning model refuses unless given their default value
SAMPLING_DEFAULTS: dict[str, float] = {
    "temperature": 1,
    "top_p": 1,
    "presence_penalty": 0,
    "frequency_penalty": 0,
}
#: the snapshot each alias resolves to: the real API answers with it in the reply's `model`
SNAPSHOTS: dict[str, str] = {
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14",
    "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07",
    "gpt-5-nano": "gpt-5-nano-2025-08-07",
    "gpt-5.1": "gpt-5.1-2025-11-13",
    "gpt-5.2": "gpt-5.2-2025-12-11",
    "o1": "o1-2024-12-17",
    "o3": "o3-2025-04-16",
    "o3-mini": "o3-mini-2025-01-31",
    "o4-mini": "o4-mini-2025-04-16",
}
DEFAULT_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-5-mini", "o4-mini"),
    "deepseek": ("deepseek-chat", "deepseek-reasoner"),
}
#: prompt caching: (minimum tokens cached, unit the cached count is rounded down to)
CACHE_GRAIN: dict[str, tuple[int, int]] = {"openai": (1024, 128), "deepseek": (64, 64)}
FENCE_RATE = 0.5  # how often DeepSeek wraps a JSON reply in a markdown fence


@dataclass(frozen=True, slots=True)
class Rejection:
    """A request the provider refuses before generating anything: HTTP status and JSON body."""

    status: int
    body: Body


def _invalid(message: str, *, param: str | None, code: str | None) -> Rejection:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Rejection(400, {"error": error})


def is_reasoning(model: str, provider: str = "openai") -> bool:
    """Whether `model` thinks before answering (and bills its thinking as output)."""
    if provider == "deepseek":
        return model == "deepseek-reasoner"
    return bool(_REASONING.match(model)) and model not in _CHAT_ALIASES


def efforts(model: str) -> tuple[str, ...]:
    """The `reasoning_effort` values a reasoning model takes."""
    minor = _NONE_EFFORT.match(model)
    return ("none", *EFFORTS) if minor and int(minor[1]) >= 1 else EFFORTS


def served_model(model: str, provider: str = "openai") -> str:
    """The `model` a reply names: OpenAI answers an alias with its dated snapshot."""
    if provider != "openai" or _DATED.search(model):
        return model
    return SNAPSHOTS.get(model, model)


def output_cap(body: Body) -> int | None:
    """The request's output cap: `max_completion_tokens`, else `max_tokens`, else none."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def check(body: Body, provider: str = "openai") -> Rejection | None:
    """The 400 the provider answers `body` with, or None when it accepts the request."""
    model = str(body.get("model") or "")
    if provider == "openai":
        rejection = _check_openai_model(body, model)
        if rejection is not None:
            return rejection
    return _check_format(body, provider)


def _check_openai_model(body: Body, model: str) -> Rejection | None:
    if not is_reasoning(model):
        if "reasoning_effort" in body:
            return _invalid("Unrecognized request argument supplied: reasoning_effort",
                            param=None, code=None)
        return None
    for name, default in SAMPLING_DEFAULTS.items():
        value = body.get(name)
        if value is None or value == default:
            continue
        if name == "temperature":
            return _invalid(
                f"Unsupported value: 'temperature' does not support {value} with this model. "
                "Only the default (1) value is supported.",
                param=name, code="unsupported_value")
        return _invalid(f"Unsupported parameter: '{name}' is not supported with this model.",
                        param=name, code="unsupported_parameter")
    if "max_tokens" in body:
        return _invalid(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            param="max_tokens", code="unsupported_parameter")
    effort = body.get("reasoning_effort")
    allowed = efforts(model)
    if effort is not None and effort not in allowed:
        listed = ", ".join(f"'{e}'" for e in allowed[:-1]) + f", and '{allowed[-1]}'"
        return _invalid(
            f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this "
            f"model. Supported values are: {listed}.",
            param="reasoning_effort", code="unsupported_value")
    return None


def _check_format(body: Body, provider: str) -> Rejection | None:
    kind = (body.get("response_format") or {}).get("type")
    if kind == "json_schema" and provider == "deepseek":
        return _invalid("This response_format type is unavailable now",
                        param=None, code="invalid_request_error")
    if kind != "json_object" or _mentions_json(body):
        return None
    if provider == "deepseek":
        return _invalid(
            "Prompt must contain the word 'json' in some form to use 'response_format' of type "
            "'json_object'.",
            param=None, code="invalid_request_error")
    return _invalid(
        "'messages' must contain the word 'json' in some form, to use 'response_format' of "
        "type 'json_object'.",
        param="messages", code=None)


def _mentions_json(body: Body) -> bool:
    return any("json" in message_text(m).lower()
               for m in body.get("messages") or [] if isinstance(m, dict))


def reasoning_tokens(body: Body, provider: str, rng: random.Random) -> int:
    """The hidden tokens a reasoning model spends on this request (0 for other models)."""
    if not is_reasoning(str(body.get("model") or ""), provider):
        return 0
    effort = body.get("reasoning_effort") or DEFAULT_EFFORT
    low, high = REASONING_TOKENS.get(str(effort), REASONING_TOKENS[DEFAULT_EFFORT])
    return rng.randint(low, high)


def fenced(content: str, body: Body, provider: str, rng: random.Random) -> str:
    """DeepSeek wraps a JSON reply in a markdown fence about half the time (it has no strict
    structured output to stop it); OpenAI never does."""
    if provider != "deepseek" or not content.lstrip().startswith(("{", "[")):
        return content
    return f"```json\n{content}\n```" if rng.random() < FENCE_RATE else content


def models_listing(provider: str, requested: list[str]) -> Body:
    """`GET /v1/models`: the provider's usual models and every one asked for so far."""
    ids = list(dict.fromkeys([*DEFAULT_MODELS.get(provider, ()), *requested]))
    owner = "deepseek" if provider == "deepseek" else "system"
    data: list[dict[str, Any]] = [
        {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": owner}
        for model in ids
    ]
    return {"object": "list", "data": data}
