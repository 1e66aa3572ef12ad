"""What an HTTP 200 may still be: a gateway's error (`{"error": {...}}` with status 200, as
OpenRouter and LiteLLM proxies send when the upstream failed), no choices at all, an empty
message without a refusal (the provider's fault, retried, never the model's invalid output), or
a refusal written as prose (Anthropic's compatibility endpoint never sets `refusal`), or no
chat completion at all (a proxy's page). Part of the gateway package."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from engine.errors import LLMBadRequest, LLMError, LLMTransientError

#: the error codes a gateway's 200 carries that are worth another try (its upstream's status)
_TRANSIENT_CODES = frozenset({408, 429, 500, 502, 503, 504, 529})
#: how models decline in prose, at the start of a reply that holds no JSON object
_REFUSAL = re.compile(
    r"^\W*(?:I'?m sorry|I am sorry|Sorry|I apologi[sz]e|Unfortunately)?[,.]?\s*(?:but\s+)?"
    r"(?:I\s+(?:can(?:no|')t|cannot|won'?t|will not|am not able to|'m not able to|am unable to|"
    r"must decline|do not feel comfortable|don'?t feel comfortable))\b", re.I)
REFUSAL_CHARS = 500


def completion_in(response: httpx2.Response, *, endpoint: str) -> ChatCompletion:
    """The reply's `ChatCompletion`, validated in one pass by pydantic-core (about a tenth of the
    CPU of the SDK's field-by-field construction); a reply its types do not describe (a local
    server's own finish reason, a missing field) is built leniently, as the SDK builds every
    reply. A body that is no JSON object (a proxy's page sent with 200) is the provider's fault,
    worth another try, never a crash."""
    try:
        return ChatCompletion.model_validate_json(response.content)
    except ValidationError:
        pass
    try:
        data = json.loads(response.content)
    except ValueError:   # not JSON, or not UTF-8
        data = None
    if not isinstance(data, dict):
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise LLMTransientError(
            f"{endpoint} answered HTTP 200 with a body that is not a chat completion ({kind}, "
            f"{len(response.content)} bytes)", status=200, endpoint=endpoint)
    return ChatCompletion.construct(**data)


def fault_in(completion: ChatCompletion, *, endpoint: str) -> LLMError | None:
    """The provider's failure a 200 carries, or None for an answer to read."""
    extra = completion.model_extra or {}
    error = extra.get("error")
    if error is not None:
        return _gateway_error(error, endpoint=endpoint)
    if not completion.choices:
        return LLMTransientError(f"{endpoint} answered with no choices (HTTP 200)",
                                 endpoint=endpoint)
    choice = completion.choices[0]
    message = choice.message
    empty = message is None or (message.content is None and not getattr(message, "refusal", None)
                                and not getattr(message, "tool_calls", None))
    if empty and choice.finish_reason not in ("content_filter", "length"):
        return LLMTransientError(f"{endpoint} answered with an empty message (HTTP 200, "
                                 f"finish_reason {choice.finish_reason!r})", endpoint=endpoint)
    return None


def _gateway_error(error: Any, *, endpoint: str) -> LLMError:
    if not isinstance(error, dict):
        return LLMTransientError(f"{endpoint} answered HTTP 200 with an error: {error}",
                                 endpoint=endpoint)
    message = str(error.get("message") or error)
    code = error.get("code")
    status = int(code) if isinstance(code, int) or (isinstance(code, str) and code.isdigit()) \
        else None
    said = f"{endpoint} answered HTTP 200 with an error"
    if status is not None:
        said += f" ({status})"
    if status is None or status in _TRANSIENT_CODES:
        return LLMTransientError(f"{said}: {message}", status=status, endpoint=endpoint)
    return LLMBadRequest(f"{said}: {message}", status=status, endpoint=endpoint,
                         code=str(code), param=error.get("param"))


def refusal_in_prose(content: str) -> str | None:
    """The model's words when a reply without any JSON object declines to answer."""
    text = content.strip()
    if "{" in text or not _REFUSAL.match(text):
        return None
    return text[:REFUSAL_CHARS]
