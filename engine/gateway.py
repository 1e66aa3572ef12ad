"""The engine's one door to an OpenAI-compatible endpoint: retries, timeouts, re-asks, errors.

The SDK's own retries are switched off (`max_retries=0`) because a step record needs the exact
number of HTTP calls, the runner needs a callback per retry, and the backoff schedule is ours:

    429, 5xx, connection error   backoff base * 2**n (capped, jittered), honouring Retry-After
    timeout of one call          cancelled and retried once, then `LLMTimeout`
    invalid JSON / schema        re-asked with the validation error, then `LLMInvalidOutput`
    content filter               `LLMContentFiltered` at once
    401 / 403                    `LLMAuthError` at once, naming the endpoint (never the key)
    any other 4xx                `LLMBadRequest` at once
    unreachable endpoint         counted by the circuit (engine/circuit.py); once it opens,
                                 every call fails at once with `LLMCircuitOpen`

This is the only module of the engine that imports `openai`; every foreign exception is
translated in `map_openai_error`.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.chat.chat_completion import Choice
from openai.types.chat.completion_create_params import ResponseFormat
from pydantic import ValidationError

from engine.backoff import backoff_delay, parse_retry_after
from engine.circuit import Circuit, unreachable_reason
from engine.domain import Usage
from engine.errors import (
    ConfigurationError,
    LLMAuthError,
    LLMBadRequest,
    LLMCircuitOpen,
    LLMContentFiltered,
    LLMError,
    LLMInvalidOutput,
    LLMTimeout,
    LLMTransientError,
    LLMUnreachable,
)
from engine.llm import CallSpec, Reply, T
from engine.redaction import public_url, redact_urls, url_secrets
from engine.replies import JSON_ONLY, describe_validation_error, extract_json, schema_name
from engine.settings import EngineSettings

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
TIMEOUT_RETRIES = 1

_TRANSIENT_STATUS = frozenset({429, 500, 502, 503})
_FILTER_CODES = frozenset(
    {"content_filter", "content_policy_violation", "responsible_ai_policy_violation"}
)
# `\bsafety\b` does not match parameter names such as `safety_identifier`.
_FILTER_TEXT = re.compile(r"content[ _-]?(policy|filter)|content management|\bsafety\b", re.I)


# --------------------------------------------------------------------------------------------
# the schema a reply must match (the SDK derives it), and the SDK's reply models


def strict_schema(schema: type[Any]) -> dict[str, Any]:
    """The strict JSON schema the SDK derives from a pydantic model (no hand-written schemas).
    Built once per model class: generating it costs milliseconds of CPU on every call."""
    cached = _STRICT_SCHEMAS.get(schema)
    if cached is None:
        cached = dict(openai.pydantic_function_tool(schema)["function"]["parameters"])
        _STRICT_SCHEMAS[schema] = cached
    return copy.deepcopy(cached)


_STRICT_SCHEMAS: dict[type[Any], dict[str, Any]] = {}


@functools.cache
def _json_schema_format(schema: type[Any]) -> ResponseFormat:
    """A schema's `response_format`, built once (requests only serialise it): no copy per call."""
    return {"type": "json_schema", "json_schema": {"name": schema_name(schema),
                                                   "schema": strict_schema(schema),
                                                   "strict": True}}


def _build_reply_models() -> None:
    """The SDK defers building its reply models until the first reply arrives (tens of ms of
    CPU inside a debate's first phase): build them now, once per process."""
    for model in (ChatCompletion, Choice, ChatCompletionMessage, CompletionUsage):
        model.model_rebuild()


# --------------------------------------------------------------------------------------------
# the one place foreign exceptions are translated


def map_openai_error(exc: BaseException, *, endpoint: str,
                     secret: str | tuple[str, ...] = "") -> LLMError:
    """Translate an SDK (or asyncio timeout) exception into the engine's hierarchy."""
    if isinstance(exc, TimeoutError | openai.APITimeoutError) and not _dropped(exc):
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
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError) or type(current).__name__ in _DROPPED:
            return True
        current = current.__cause__ or current.__context__
    return False


#: aiohttp's "the server closed the connection" (not an OSError); by name: the engine does not
#: import aiohttp
_DROPPED = frozenset({"ServerDisconnectedError"})


def _map_status_error(exc: openai.APIStatusError, *, endpoint: str,
                      secret: str | tuple[str, ...]) -> LLMError:
    status = exc.status_code
    detail = _redact(exc.message, secret)
    if status in (401, 403):
        return LLMAuthError(
            f"{endpoint} refused the credentials (HTTP {status}). Set OPENAI_API_KEY to a key "
            f"with access to this endpoint, or OPENAI_BASE_URL to the server you mean to use.",
            status=status,
            endpoint=endpoint,
        )
    if status in _TRANSIENT_STATUS or status >= 500:
        return LLMTransientError(
            f"{endpoint} answered HTTP {status}: {detail}",
            status=status,
            endpoint=endpoint,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if _is_content_filter(exc):
        return LLMContentFiltered(
            f"{endpoint} refused the prompt under its content policy: {detail}",
            status=status,
            endpoint=endpoint,
        )
    return LLMBadRequest(
        f"{endpoint} rejected the request: {detail}", status=status, endpoint=endpoint
    )


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
def _translate_errors(endpoint: str, secret: str | tuple[str, ...]) -> Iterator[None]:
    try:
        yield
    except (openai.OpenAIError, TimeoutError) as exc:
        raise map_openai_error(exc, endpoint=endpoint, secret=secret) from exc


# --------------------------------------------------------------------------------------------
# the gateway


@dataclass(slots=True)
class _CallState:
    """What one `complete` has done so far: the conversation, the HTTP calls, the bill."""

    messages: list[ChatCompletionMessageParam]
    calls: int = 0
    transient_retries: int = 0
    timeout_retries: int = 0
    reasks: int = 0
    billed: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class OpenAIGateway:
    """`engine.llm.LLMClient` over the openai SDK, for OpenAI or any compatible server."""

    def __init__(
        self,
        settings: EngineSettings,
        *,
        sleep: Sleep = asyncio.sleep,
        http_client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
        circuit: Circuit | None = None,
    ) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        if not key and not settings.openai_base_url:
            raise ConfigurationError(
                "no LLM endpoint configured: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local "
                "OpenAI-compatible server"
            )
        self._settings = settings
        self._secret = tuple(s for s in (key, *url_secrets(settings.openai_base_url)) if s)
        self._endpoint = public_url(settings.openai_base_url or DEFAULT_BASE_URL)  # for messages
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._circuit = circuit or Circuit(threshold=settings.circuit_failures,
                                           cooldown=settings.circuit_cooldown)
        self._client = openai.AsyncOpenAI(
            api_key=key or "not-needed",  # local servers (Ollama, vLLM) ignore the key
            base_url=settings.openai_base_url or DEFAULT_BASE_URL,
            max_retries=0,
            timeout=settings.call_timeout,
            http_client=http_client or _transport(settings.openai_base_url,
                                                  settings.call_timeout),
        )
        _build_reply_models()

    @property
    def rehearsal(self) -> bool:
        return False

    @property
    def endpoint(self) -> str:
        return self._endpoint

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        """One schema-validated completion, after the retries and re-asks each error allows."""
        started = time.monotonic()
        state = _CallState(messages=self._initial_messages(spec))
        while True:
            completion = await self._send_with_retries(spec, state)
            content = self._content_of(completion)
            try:
                value = spec.schema.model_validate_json(extract_json(content))
            except ValidationError as exc:
                await self._reask(spec, state, content, exc)
                continue
            return Reply(
                value=value,
                usage=state.usage,
                model=state.model or spec.model,
                attempts=state.calls,
                latency_s=time.monotonic() - started,
                calls=state.billed,
            )

    # --- one HTTP call, and the retries around it ---

    async def _send_with_retries(self, spec: CallSpec[T], state: _CallState) -> ChatCompletion:
        while True:
            state.calls += 1
            try:
                completion = await self._send_once(spec, state.messages)
            except LLMTimeout:
                if state.timeout_retries >= TIMEOUT_RETRIES:
                    raise
                state.timeout_retries += 1
                await self._notify(spec, state.calls, "timeout", 0.0)
            except LLMCircuitOpen:
                raise
            except LLMTransientError as exc:
                delay = self._transient_delay(state, exc)
                reason = f"HTTP {exc.status}" if exc.status else "connection error"
                await self._notify(spec, state.calls, reason, delay)
                await self._sleep(delay)
            else:
                self._account(spec, state, completion)
                return completion

    async def _send_once(
        self, spec: CallSpec[T], messages: list[ChatCompletionMessageParam]
    ) -> ChatCompletion:
        with self._circuit.request(self._endpoint), _translate_errors(self._endpoint,
                                                                       self._secret):
            async with asyncio.timeout(spec.timeout):
                # posted as built: the SDK's typed transform of `create` walks every message
                # and the whole schema on every call (~1 ms of CPU) only to reproduce this JSON
                return await self._client.post(
                    "/chat/completions", cast_to=ChatCompletion, body=self._body(spec, messages),
                    options={"timeout": spec.timeout, "security": {"bearer_auth": True},
                             "headers": {"X-Dialectic-Role": spec.role,
                                         "X-Dialectic-Step": spec.step or spec.role}})

    def _transient_delay(self, state: _CallState, exc: LLMTransientError) -> float:
        """The wait before the next retry; re-raises once `max_retries` retries are spent."""
        if state.transient_retries >= self._settings.max_retries:
            raise LLMTransientError(
                f"gave up after {state.calls} attempts: {exc}",
                status=exc.status,
                endpoint=exc.endpoint,
                retry_after=exc.retry_after,
            ) from exc
        delay = backoff_delay(
            state.transient_retries,
            base=self._settings.backoff_base,
            cap=self._settings.backoff_cap,
            retry_after=exc.retry_after,
            rng=self._rng,
        )
        state.transient_retries += 1
        return delay

    async def _reask(
        self, spec: CallSpec[T], state: _CallState, content: str, exc: ValidationError
    ) -> None:
        """Append the bad reply and the validation error, or give up after the allowed re-asks."""
        problem = describe_validation_error(exc)
        if state.reasks >= self._settings.invalid_output_retries:
            raise LLMInvalidOutput(
                f"{spec.model} replied with invalid output for {spec.schema.__name__} after "
                f"{state.calls} attempts: {problem}",
                endpoint=self._endpoint,
            ) from exc
        state.reasks += 1
        state.messages.append({"role": "assistant", "content": content})
        state.messages.append(
            {
                "role": "user",
                "content": f"Your reply was not valid for the required JSON schema: {problem}\n"
                f"Reply again with the corrected JSON object only, no prose and no code fences.",
            }
        )
        await self._notify(spec, state.calls, "invalid output", 0.0)

    async def _notify(self, spec: CallSpec[T], attempt: int, reason: str, delay: float) -> None:
        log.warning(
            "LLM call for %s failed on attempt %d (%s); retrying in %.2f s",
            spec.role,
            attempt,
            reason,
            delay,
        )
        if spec.on_retry is not None:
            await spec.on_retry(attempt, reason, delay)

    # --- request and response shapes ---

    def _initial_messages(self, spec: CallSpec[T]) -> list[ChatCompletionMessageParam]:
        system = spec.prompt.system
        mode = self._settings.output_mode
        if mode != "json_schema":
            system = f"{system}\n\n{_schema_instructions(spec.schema, mode)}".strip()
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": spec.prompt.user},
        ]

    def _body(self, spec: CallSpec[T], messages: list[ChatCompletionMessageParam]
              ) -> dict[str, Any]:
        """The request's JSON, as `create` would send it (no unset parameters)."""
        body: dict[str, Any] = {"model": spec.model, "messages": messages}
        if spec.temperature is not None:
            body["temperature"] = spec.temperature
        response_format = self._response_format(spec)
        if not isinstance(response_format, openai.Omit):
            body["response_format"] = response_format
        return body

    def _response_format(self, spec: CallSpec[T]) -> ResponseFormat | openai.Omit:
        mode = self._settings.output_mode
        if mode == "json_schema":
            return _json_schema_format(spec.schema)
        if mode == "json_object":
            return {"type": "json_object"}
        return openai.omit

    def _content_of(self, completion: ChatCompletion) -> str:
        if not completion.choices:
            return ""
        choice = completion.choices[0]
        if choice.finish_reason == "content_filter":
            raise LLMContentFiltered(
                f"the content filter of {self._endpoint} stopped the completion",
                endpoint=self._endpoint,
            )
        return choice.message.content or ""

    @staticmethod
    def _account(spec: CallSpec[T], state: _CallState, completion: ChatCompletion) -> None:
        """Every reply is billed, whatever comes of it (re-asked, filtered, given up on)."""
        usage = Usage()
        if completion.usage is not None:
            usage = Usage(prompt_tokens=completion.usage.prompt_tokens,
                          completion_tokens=completion.usage.completion_tokens)
        state.usage = state.usage + usage
        state.billed += 1
        state.model = completion.model or state.model
        if spec.meter is not None:
            spec.meter.bill(usage, completion.model or spec.model)


def _transport(base_url: str | None, timeout: float) -> openai.DefaultAioHttpClient | None:
    """The SDK's aiohttp transport: half the CPU per call of its default one, whose pool scans
    every idle connection per request; a dropped connection it calls a timeout (see
    `map_openai_error`). A URL with credentials, which aiohttp refuses beside the Authorization
    header, keeps the SDK's default transport (None)."""
    parts = urlsplit(base_url or DEFAULT_BASE_URL)
    if parts.username is not None or parts.password is not None:
        return None
    return openai.DefaultAioHttpClient(timeout=timeout)


def _schema_instructions(schema: type[Any], mode: str) -> str:
    text = json.dumps(strict_schema(schema), separators=(",", ":"))
    lead = "Reply with one JSON object that matches this JSON schema"
    if mode == "prompt":
        return f"{lead}:\n{text}\n{JSON_ONLY}"
    return f"{lead}:\n{text}"
