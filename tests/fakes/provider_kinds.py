"""The other providers teams point Dialectic at, as their OpenAI-compatible endpoints document
themselves (the fake's `provider=`), beside OpenAI's and DeepSeek's in `provider_rules`:

* "anthropic" (Anthropic's OpenAI SDK compatibility): `response_format` and `reasoning_effort`
  ignored, temperature capped at 1, `n` must be 1; without a schema in the prompt Claude writes
  JSON with keys of its own choosing; a refusal is prose in `content` (`refusal` never set).
* "gemini" (Gemini's OpenAI compatibility): 2.5 and later think, 1-3x the reply by effort, the
  thoughts inside the output cap but outside `completion_tokens` (only `total_tokens` counts
  them); errors come list-wrapped, a 429 with `RetryInfo`'s `retryDelay`.
* "azure": deployment names (`deployments={"reasoning-prod": "o4-mini"}`) follow the rules of
  the model behind them, which the reply names.
* "gateway" (OpenRouter / LiteLLM style): provider-prefixed ids, `usage.cost` in USD, upstreams
  of open models ("meta-llama/…") that ignore `response_format`; `gateway_error` answers 200
  with an `{"error": …}` body.
* "vllm" (`--max-model-len`): `/v1/models` lists `max_model_len`; a prompt plus `max_tokens`
  past the window is a 400 in vLLM's words.
* "llamacpp" (llama.cpp's server): `/props` gives `n_ctx`; a prompt past it is a 400
  `exceed_context_size_error` naming `n_ctx`; a cap past the window stops at the window.
* "ollama": a thinking model (deepseek-r1, qwen3) writes `<think>…</think>`, braces included,
  before its JSON, all of it in `completion_tokens`.
"""

from __future__ import annotations

import random
import re
from typing import Any

from tests.fakes.chat_requests import Body, last_text
from tests.fakes.schema_faker import request_schema, schema_in_text

KINDS = ("anthropic", "gemini", "azure", "gateway", "vllm", "llamacpp", "ollama")
DEFAULT_WINDOW = {"vllm": 8192, "llamacpp": 4096}
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_GEMINI_THINKS = re.compile(r"^gemini-(?:2\.5|[3-9])")
_OLLAMA_THINKS = re.compile(r"^(?:deepseek-r1|qwen3)")
_IGNORES_FORMAT = ("meta-llama/", "mistralai/")
#: thoughts per visible token, drawn per request, by Gemini's effort (its default is dynamic)
GEMINI_THINKING = {"none": (0.0, 0.0), "low": (0.5, 1.0), "medium": (1.0, 2.0),
                   "high": (2.0, 3.0), None: (1.0, 3.0)}
#: a gateway's rates (USD per million tokens: input, output) for the ids it serves
GATEWAY_RATES: dict[str, tuple[float, float]] = {
    "openai/gpt-4o-mini": (0.15, 0.60), "openai/gpt-4.1-mini": (0.40, 1.60),
    "anthropic/claude-sonnet-4-5": (3.00, 15.00),
    "meta-llama/llama-3.1-8b-instruct": (0.02, 0.05),
}
_CLAUDE_KEYS = ("position", "reasoning", "points", "conclusion")


def behind(model: str, provider: str, deployments: dict[str, str]) -> str:
    """The model that answers: a deployment's model (Azure), the id behind a gateway's prefix."""
    if provider == "azure":
        return deployments.get(model, model)
    if provider == "gateway":
        return model.rsplit("/", 1)[-1]
    return model


def ignores_response_format(provider: str, model: str) -> bool:
    return provider == "anthropic" or (provider == "gateway" and model.startswith(
        _IGNORES_FORMAT))


def schema_for(body: Body, provider: str) -> Body | None:
    """The schema the model follows: the request's, or only the prompt's where the endpoint
    ignores `response_format`."""
    if ignores_response_format(provider, str(body.get("model") or "")):
        return schema_in_text(last_text(body, "system"))
    return request_schema(body)


def invented(rng: random.Random, text: str) -> Body:
    """What Claude writes when asked for JSON without being told the keys."""
    keys = rng.sample(_CLAUDE_KEYS, 3)
    return {key: text for key in keys}


def check(body: Body, provider: str, *, prompt: int, window: int | None) -> tuple[int, Any] | None:
    """The (status, body) an endpoint of `provider` refuses `body` with, or None."""
    if provider == "anthropic" and body.get("n") not in (None, 1):
        return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                 "message": "n: Must be exactly 1"}}
    if provider == "gemini":
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in ("none", "low", "medium", "high"):
            return 400, gemini_error(400, f"Invalid reasoning effort: {effort}",
                                     "INVALID_ARGUMENT")
    if window is None:
        return None
    cap = body.get("max_tokens") or body.get("max_completion_tokens")
    if provider == "vllm":
        completion = int(cap) if isinstance(cap, int) else 0
        if prompt + completion > window:
            message = (f"This model's maximum context length is {window} tokens. However, you "
                       f"requested {prompt + completion} tokens ({prompt} in the messages, "
                       f"{completion} in the completion). Please reduce the length of the "
                       f"messages or completion.")
            return 400, {"object": "error", "message": message, "type": "BadRequestError",
                         "param": None, "code": 400}
    if provider == "llamacpp" and prompt >= window:
        return 400, {"error": {"code": 400, "type": "exceed_context_size_error",
                               "message": "the request exceeds the available context size, "
                                          "try increasing it",
                               "n_prompt_tokens": prompt, "n_ctx": window}}
    return None


def gemini_error(status: int, message: str, state: str, *, retry_delay: float | None = None
                 ) -> list[Body]:
    """Gemini's error body, list-wrapped, with a RetryInfo detail when it asks for a wait."""
    error: Body = {"code": status, "message": message, "status": state}
    if retry_delay is not None:
        error["details"] = [{"@type": RETRY_INFO, "retryDelay": f"{retry_delay:g}s"}]
    return [{"error": error}]


def wrap_error(provider: str, status: int, body: Body) -> Any:
    """An error body as `provider` words it (Gemini wraps OpenAI's shape in a list)."""
    if provider != "gemini" or isinstance(body, list):
        return body
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    states = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 500: "INTERNAL"}
    return gemini_error(status, str(inner.get("message") or f"error {status}"),
                        states.get(status, "INVALID_ARGUMENT"))


def thoughts(body: Body, provider: str, visible: int, rng: random.Random) -> int:
    """Gemini's hidden thinking tokens for a reply of `visible` tokens (0 elsewhere)."""
    if provider != "gemini" or not _GEMINI_THINKS.match(str(body.get("model") or "")):
        return 0
    low, high = GEMINI_THINKING.get(body.get("reasoning_effort"), GEMINI_THINKING[None])
    return int(visible * rng.uniform(low, high))


def think_block(body: Body, provider: str, rng: random.Random) -> str:
    """The `<think>` text a local thinking model writes before its answer (braces and all)."""
    if provider != "ollama" or not _OLLAMA_THINKS.match(str(body.get("model") or "")):
        return ""
    steps = rng.randint(2, 5)
    lines = [f"Step {n}: the reply must look like {{\"key\": {n}}}, so I weigh {{pro, con}}."
             for n in range(1, steps + 1)]
    return "<think>\n" + "\n".join(lines) + "\n</think>\n\n"


def gateway_cost(model: str, prompt: int, completion: int) -> float | None:
    rates = GATEWAY_RATES.get(model)
    if rates is None:
        return None
    return (prompt * rates[0] + completion * rates[1]) / 1_000_000


def models_entry(provider: str, model: str, window: int | None) -> Body:
    entry: Body = {"id": model, "object": "model", "created": 1_700_000_000,
                   "owned_by": provider}
    if provider == "vllm" and window is not None:
        entry["max_model_len"] = window
    return entry
