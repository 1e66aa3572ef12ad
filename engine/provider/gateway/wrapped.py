"""An error body as each provider writes it: OpenAI's `{"error": {...}}` (the SDK unwraps it),
and Google's list-wrapped `[{"error": {"code": 429, "message": ..., "status":
"RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
"retryDelay": "13s"}]}}]` from Gemini's OpenAI compatibility, whose message and wait the SDK
loses ("Error code: 429"). Part of the gateway package."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class ErrorDetail(NamedTuple):
    """What an error body says: its message, its code, the wait it asks for."""

    message: str = ""
    code: str | None = None
    retry_after: float | None = None


def error_detail(body: object) -> ErrorDetail:
    """The message, code and RetryInfo wait of an error body, list-wrapped or not."""
    error: Any = body
    if isinstance(error, list) and error:
        error = error[0]
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if not isinstance(error, dict):
        return ErrorDetail()
    message = error.get("message")
    status = error.get("status")
    code = status if isinstance(status, str) else None
    return ErrorDetail(message=str(message) if message else "", code=code,
                       retry_after=_retry_delay(error.get("details")))


def _retry_delay(details: object) -> float | None:
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            found = _DURATION.match(str(detail.get("retryDelay") or ""))
            if found is not None:
                return float(found.group(1))
    return None
