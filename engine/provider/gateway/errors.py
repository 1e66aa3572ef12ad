"""The one place the SDK's exceptions become the engine's (engine/errors.py): status codes,
connection failures, timeouts and content filters, with keys and URL credentials redacted.
Part of the gateway package, the only code that imports `openai`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import openai

from engine.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMContentFiltered,
    LLMError,
    LLMTimeout,
    LLMTransientError,
    LLMUnreachable,
)
from engine.provider.backoff import parse_retry_after
from engine.provider.circuit import unreachable_reason
from engine.provider.gateway.wrapped import error_detail
from engine.provider.profiles import window_in_error
from engine.provider.redaction import redact_urls

#: 408: a gateway (OpenRouter, a LiteLLM proxy) whose upstream timed out
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503})
_FILTER_CODES = frozenset(
    {"content_filter", "content_policy_violation", "responsible_ai_policy_violation"}
)
# `\bsafety\b` does not match parameter names such as `safety_identifier`.
_FILTER_TEXT = re.compile(r"content[ _-]?(policy|filter)|content management|\bsafety\b", re.I)




def map_openai_error(exc: BaseException, *, endpoint: str,
                     secret: str | tuple[str, ...] = "") -> LLMError:
    """Translate an SDK (or asyncio timeout) exception into the engine's hierarchy."""
    if isinstance(exc, TimeoutError | openai.APITimeoutError) and not _dropped(exc):
        if _in_chain(exc, _READ_TIMEOUTS):
            return LLMTimeout(f"the reply from {endpoint} stalled past the read timeout "
                              "(DIALECTIC_READ_TIMEOUT); its usage never arrived, so what it "
                              "billed is unknown", endpoint=endpoint, stalled=True)
        return LLMTimeout(f"the call to {endpoint} timed out", endpoint=endpoint)
    if isinstance(exc, openai.APIConnectionError):
        reason = unreachable_reason(exc)
        if reason is not None:
            return LLMUnreachable(f"could not reach {endpoint}: {reason}", reason=reason,
                                  endpoint=endpoint)
        message = f"could not reach {endpoint}: {_redact(str(exc), secret)}"
        return LLMTransientError(message, endpoint=endpoint)
    if isinstance(exc, openai.APIStatusError):
        return _map_status_error(exc, endpoint=endpoint, secret=secret)
    return LLMError(f"{endpoint}: {_redact(str(exc), secret)}", endpoint=endpoint)


def _dropped(exc: BaseException) -> bool:
    """Whether a "timeout" was in fact a connection the server refused, reset or closed: the
    SDK's aiohttp transport reports those as connect timeouts. Found in the chain of causes."""
    return _in_chain(exc, _DROPPED, ConnectionError)


def _in_chain(exc: BaseException, names: frozenset[str],
              kind: type[BaseException] | None = None) -> bool:
    """Whether an exception named one of `names` (or of `kind`) is in `exc`'s chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (kind is not None and isinstance(current, kind)) or type(current).__name__ in names:
            return True
        current = current.__cause__ or current.__context__
    return False


#: a read timeout, as the transports name it (httpx's, aiohttp's socket read timeout)
_READ_TIMEOUTS = frozenset({"ReadTimeout", "SocketTimeoutError"})


#: aiohttp's "the server closed the connection" (not an OSError); by name: the engine does not
#: import aiohttp
_DROPPED = frozenset({"ServerDisconnectedError"})


def _map_status_error(exc: openai.APIStatusError, *, endpoint: str,
                      secret: str | tuple[str, ...]) -> LLMError:
    status = exc.status_code
    said = error_detail(exc.body)
    wrapped = isinstance(exc.body, list) and said.message   # the SDK kept only "Error code: N"
    detail = _redact(f"Error code: {status} - {said.message}" if wrapped else exc.message, secret)
    if status in (401, 403):
        return LLMAuthError(
            f"{endpoint} refused the credentials (HTTP {status}). Set OPENAI_API_KEY to a key "
            f"with access to this endpoint, or OPENAI_BASE_URL to the server you mean to use.",
            status=status,
            endpoint=endpoint,
        )
    if status == 429 and getattr(exc, "code", None) == "insufficient_quota":
        # no wait helps: the account is out of credit (not an overload to wait out)
        return LLMBadRequest(f"{endpoint} says the account is out of quota (HTTP 429): "
                             f"{detail}", status=status, endpoint=endpoint,
                             code="insufficient_quota")
    if status in _TRANSIENT_STATUS or status >= 500:
        return LLMTransientError(
            f"{endpoint} answered HTTP {status}: {detail}",
            status=status,
            endpoint=endpoint,
            retry_after=parse_retry_after(exc.response.headers) or said.retry_after,
        )
    if _is_content_filter(exc):
        return LLMContentFiltered(
            f"{endpoint} refused the prompt under its content policy: {detail}",
            status=status,
            endpoint=endpoint,
        )
    code = getattr(exc, "code", None) or said.code
    message = f"{endpoint} rejected the request: {detail}"
    if status == 404:
        message = _not_found(endpoint, detail, code)
    return LLMBadRequest(message, status=status, endpoint=endpoint,
                         param=getattr(exc, "param", None), code=code,
                         window=window_in_error(detail, exc.body) if status == 400 else None)


def _not_found(endpoint: str, detail: str, code: str | None) -> str:
    """A 404 says which is missing: the model (OpenAI's `model_not_found`), or the API itself
    at this address, most often for a base URL without its `/v1`."""
    if code == "model_not_found" or "model" in detail.lower():
        return f"{endpoint} does not know the model (HTTP 404): {detail}"
    base = endpoint.rstrip("/")
    # a path naming its own version (Gemini's /v1beta/openai, Azure's /openai/v1) is no
    # missing /v1
    versioned = re.search(r"/v\d[^/]*(?:/|$)", urlsplit(base).path) is not None
    hint = "" if versioned else f"; did you mean {base}/v1?"
    return (f"{endpoint} answered HTTP 404: no chat-completions API at this address{hint} "
            f"(check OPENAI_BASE_URL)")


def _is_content_filter(exc: openai.APIStatusError) -> bool:
    if exc.status_code != 400:
        return False
    if (exc.code or "").lower() in _FILTER_CODES:
        return True
    return bool(_FILTER_TEXT.search(exc.message))


def _redact(text: str, secret: str | tuple[str, ...]) -> str:
    """`text` without the key, the endpoint's credentials or any URL's user info."""
    for one in (secret,) if isinstance(secret, str) else secret:
        if one:
            text = text.replace(one, "***")
    return redact_urls(text)


@contextmanager
def translate_errors(endpoint: str, secret: str | tuple[str, ...]) -> Iterator[None]:
    try:
        yield
    except (openai.OpenAIError, TimeoutError) as exc:
        raise map_openai_error(exc, endpoint=endpoint, secret=secret) from exc
