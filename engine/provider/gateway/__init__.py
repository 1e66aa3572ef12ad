"""The engine's one door to an OpenAI-compatible endpoint: retries, timeouts, re-asks, errors.

The SDK's own retries are switched off (`max_retries=0`) because a step record needs the exact
number of HTTP calls, the runner needs a callback per retry, and the backoff schedule is ours:

    429, 5xx, connection error   backoff base * 2**n (capped, jittered), honouring Retry-After
    timeout of one call          cancelled and retried once, then `LLMTimeout`; a reply whose
                                 body stalls past the read timeout likewise (its bill unknown)
    invalid JSON / schema        re-asked with the validation error, then `LLMInvalidOutput`
    a refusal (message.refusal)  `LLMRefused` at once, with the model's words (never re-asked)
    cut at the output cap        sent again once with twice the cap, then `LLMTruncated`
    400 naming a parameter       the parameter dropped (or the cap renamed, or JSON mode used
                                 instead of a schema), sent again, remembered per endpoint and
                                 model (engine/provider/profiles.py `Learned`)
    content filter               `LLMContentFiltered` at once
    401 / 403                    `LLMAuthError` at once, naming the endpoint (never the key)
    any other 4xx                `LLMBadRequest` at once
    unreachable endpoint         counted by the circuit (engine/provider/circuit.py); once it opens,
                                 every call fails at once with `LLMCircuitOpen`

This package is the only code of the engine that imports `openai`; every foreign exception is
translated in `engine.provider.gateway.errors.map_openai_error`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2
import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.chat.chat_completion import Choice
from pydantic import ValidationError

from engine.domain import Usage
from engine.errors import (
    ConfigurationError,
    LLMBadRequest,
    LLMCircuitOpen,
    LLMContentFiltered,
    LLMInvalidOutput,
    LLMRefused,
    LLMTimeout,
    LLMTransientError,
    LLMTruncated,
)
from engine.provider.backoff import backoff_delay
from engine.provider.circuit import Circuit
from engine.provider.gateway import requests
from engine.provider.gateway.answers import completion_in, fault_in, refusal_in_prose
from engine.provider.gateway.errors import map_openai_error, translate_errors
from engine.provider.gateway.requests import DEFAULT_BASE_URL, strict_schema
from engine.provider.gateway.windows import discover_window
from engine.provider.lessons import Learned, LessonBook
from engine.provider.llm import CallSpec, Reply, T
from engine.provider.naming import qualified
from engine.provider.profiles import ModelProfile, profile_for, unsupported_parameter
from engine.provider.redaction import public_url, url_secrets
from engine.provider.replies import describe_validation_error, extract_json, reported_usage
from engine.settings import EngineSettings

__all__ = ["DEFAULT_BASE_URL", "OpenAIGateway", "map_openai_error", "strict_schema"]

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

TIMEOUT_RETRIES = 1
#: how much of what was wrong a retry's reason carries into the trace and the logs
REASON_CHARS = 300
#: the output cap when the caller names none, and the most a cut-off retry asks for
DEFAULT_OUTPUT_CAP = 4096
MAX_OUTPUT_CAP = 65_536
#: the statuses of an overloaded provider (503, Anthropic's 529, a rate limit): a burst of them
#: is waited out for up to `EngineSettings.overload_wait` seconds, past `max_retries`
_OVERLOADED = frozenset({429, 503, 529})
#: a retry's reason when the reply's body stalled: the bill it ran up is not known, and is not
#: guessed (its usage was at the end of the body that never came)
_STALLED = "reply stalled past the read timeout; its usage never arrived, its bill is unknown"


def _build_reply_models() -> None:
    """The SDK defers building its reply models until the first reply arrives (tens of ms of
    CPU inside a debate's first phase): build them now, once per process."""
    for model in (ChatCompletion, Choice, ChatCompletionMessage, CompletionUsage):
        model.model_rebuild()


# --------------------------------------------------------------------------------------------
# the gateway


@dataclass(slots=True)
class _CallState:
    """What one `complete` has done so far: the conversation, the HTTP calls, the bill."""

    extra: list[ChatCompletionMessageParam] = field(default_factory=list)  # re-ask turns
    cap: int = DEFAULT_OUTPUT_CAP
    cut_offs: int = 0
    calls: int = 0
    transient_retries: int = 0
    timeout_retries: int = 0
    reasks: int = 0
    billed: int = 0
    waited: float = 0.0   # seconds slept before retries
    window: int | None = None   # the context window the last request's cap was fitted to
    sent_cap: int | None = None  # the cap the last request carried
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class OpenAIGateway:
    """`engine.provider.llm.LLMClient` over the openai SDK, for OpenAI or any compatible server."""

    def __init__(
        self,
        settings: EngineSettings,
        *,
        sleep: Sleep = asyncio.sleep,
        http_client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
        circuit: Circuit | None = None,
        lessons: LessonBook | None = None,
        name: str | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        if not key and not settings.openai_base_url:
            raise ConfigurationError(
                "no LLM endpoint configured: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local "
                "OpenAI-compatible server"
            )
        self._settings = settings
        self.name = name   # a named provider's (its models' replies are named `NAME:model`)
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._secret = tuple(s for s in (key, *url_secrets(settings.openai_base_url)) if s)
        self._endpoint = public_url(settings.openai_base_url or DEFAULT_BASE_URL)  # for messages
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._circuit = circuit or Circuit(threshold=settings.circuit_failures,
                                           cooldown=settings.circuit_cooldown)
        self.learned = Learned(lessons)
        self._windows: dict[str, int | None] = {}   # model -> window the server said
        self._client = openai.AsyncOpenAI(
            api_key=key or "not-needed",  # local servers (Ollama, vLLM) ignore the key
            base_url=settings.openai_base_url or DEFAULT_BASE_URL,
            max_retries=0,
            timeout=settings.call_timeout,
            http_client=http_client or requests.transport(settings.openai_base_url,
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

    def profile(self, model: str) -> ModelProfile:
        """What `model` accepts here: its documented profile, the configured output mode, and
        what this endpoint's 400s have taught since."""
        profile = profile_for(model, self._settings.openai_base_url,
                              kind=self._settings.provider_kind)
        if self._settings.output_mode is not None:
            profile = replace(profile, output_mode=self._settings.output_mode)
        return self.learned.apply(profile, endpoint=self._endpoint, model=model)

    async def window(self, model: str) -> int | None:
        """`model`'s context window: configured, learned from a 400, or said by the server
        (a local one: vLLM's /models, llama.cpp's /props); None when nobody says."""
        configured = self._settings.context_windows.get(model)
        if configured is not None:
            return configured
        learned = self.learned.window(endpoint=self._endpoint, model=model)
        if learned is not None:
            return learned
        if model not in self._windows:
            found = None
            if self.profile(model).kind == "local":
                found = await discover_window(self._client, model)
            self._windows[model] = found
        return self._windows[model]

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        """One schema-validated completion, after the retries and re-asks each error allows."""
        started = time.monotonic()
        await self.learned.load(self._endpoint)
        state = _CallState(cap=spec.max_output_tokens or DEFAULT_OUTPUT_CAP)
        while True:
            completion = await self._send_with_retries(spec, state)
            content = await self._content_of(spec, state, completion)
            if content is None:
                continue  # cut off at the cap: sent again with a larger one
            try:
                value = spec.schema.model_validate_json(extract_json(content))
            except ValidationError as exc:
                await self._reask(spec, state, content, exc)
                continue
            return Reply(
                value=value,
                usage=state.usage,
                model=qualified(self.name, state.model or spec.model),
                attempts=state.calls,
                latency_s=time.monotonic() - started,
                calls=state.billed,
                finish_reason=(completion.choices[0].finish_reason if completion.choices
                               else None) or "stop",
            )

    # --- one HTTP call, and the retries around it ---

    async def _send_with_retries(self, spec: CallSpec[T], state: _CallState) -> ChatCompletion:
        while True:
            state.calls += 1
            profile = self.profile(spec.model)
            seen = self.learned.version(endpoint=self._endpoint, model=spec.model)
            state.window = await self.window(spec.model)
            body = requests.body(spec, state.extra, profile, cap=state.cap, window=state.window)
            state.sent_cap = body.get(profile.cap)
            try:
                completion = await self._send_once(spec, body)
                self._account(spec, state, completion)
                fault = fault_in(completion, endpoint=self._endpoint)
                if fault is not None:
                    raise fault
            except LLMTimeout as exc:
                if state.timeout_retries >= TIMEOUT_RETRIES:
                    raise
                state.timeout_retries += 1
                await self._notify(spec, state.calls, _STALLED if exc.stalled else "timeout",
                                   0.0)
            except LLMCircuitOpen:
                raise
            except LLMTransientError as exc:
                delay = self._transient_delay(state, exc)
                reason = f"HTTP {exc.status}" if exc.status else "connection error"
                await self._notify(spec, state.calls, reason, delay)
                state.waited += delay
                await self._sleep(delay)
            except LLMBadRequest as exc:
                reason = await self._learn(spec, profile, seen, exc)
                await self._notify(spec, state.calls, reason, 0.0)
            else:
                return completion

    async def _learn(self, spec: CallSpec[T], profile: ModelProfile, seen: int,
                     exc: LLMBadRequest) -> str:
        """What a 400 teaches (a parameter to change, the context window), taken once for
        every parallel call; re-raises the 400 when there is nothing to change."""
        where = {"endpoint": self._endpoint, "model": spec.model}
        if exc.window is not None:
            if await self.learned.learn_window(exc.window, **where) or (
                    seen != self.learned.version(**where)):
                return f"context window {exc.window} tokens"
            raise exc
        refused = unsupported_parameter(param=exc.param, code=exc.code, message=str(exc))
        if refused is None or not await self.learned.learn(refused, profile, seen=seen,
                                                           **where):
            raise exc
        return f"{refused} not supported"

    async def _send_once(self, spec: CallSpec[T], body: dict[str, Any]) -> ChatCompletion:
        if self._slots is None:
            return await self._post(spec, body)
        async with self._slots:   # the provider's `max_concurrency`
            return await self._post(spec, body)

    async def _post(self, spec: CallSpec[T], body: dict[str, Any]) -> ChatCompletion:
        with self._circuit.request(self._endpoint), translate_errors(self._endpoint,
                                                                       self._secret):
            async with asyncio.timeout(spec.timeout):
                # posted as built: the SDK's typed transform of `create` walks every message
                # and the whole schema on every call (~1 ms of CPU) only to reproduce this JSON,
                # whose bytes are encoded here (faster: requests.encoded); the reply comes back
                # as the SDK's response, read whole, and is parsed once
                response = await self._client.post(
                    "/chat/completions", cast_to=httpx2.Response,
                    content=requests.encoded(body, spec.schema),
                    options={"timeout": self._timeout(spec.timeout),
                             "idempotency_key": requests.idempotency_key(),
                             "security": {"bearer_auth": True},
                             "headers": {"X-Dialectic-Role": spec.role,
                                         "X-Dialectic-Step": spec.step or spec.role}})
            return completion_in(response, endpoint=self._endpoint)

    def _timeout(self, total: float) -> float | httpx2.Timeout:
        """The call's timeout, with the read timeout (the longest silence while the reply is
        read) when one shorter than the call's is set."""
        read = self._settings.read_timeout
        if read is None or read >= total:
            return total
        return httpx2.Timeout(total, read=read)

    def _transient_delay(self, state: _CallState, exc: LLMTransientError) -> float:
        """The wait before the next retry; re-raises once `max_retries` retries are spent and,
        for an overloaded provider (503, 529, 429), once `overload_wait` seconds are waited."""
        delay = backoff_delay(
            state.transient_retries,
            base=self._settings.backoff_base,
            cap=self._settings.backoff_cap,
            retry_after=exc.retry_after,
            rng=self._rng,
        )
        spent = state.transient_retries >= self._settings.max_retries
        if spent and (exc.status not in _OVERLOADED
                      or state.waited + delay > self._settings.overload_wait):
            raise LLMTransientError(
                f"gave up after {state.calls} attempts: {exc}",
                status=exc.status,
                endpoint=exc.endpoint,
                retry_after=exc.retry_after,
            ) from exc
        state.transient_retries += 1
        return delay

    async def _reask(
        self, spec: CallSpec[T], state: _CallState, content: str, exc: ValidationError
    ) -> None:
        """Append the bad reply and the validation error, or give up after the allowed re-asks,
        or once the step has had its paid attempts (1 + the re-asks; a reply cut at its cap and
        asked again counts as one)."""
        problem = describe_validation_error(exc)
        allowed = self._settings.invalid_output_retries
        if state.reasks >= allowed or state.billed > allowed:
            raise LLMInvalidOutput(
                f"{spec.model} replied with invalid output for {spec.schema.__name__} after "
                f"{state.calls} attempts: {problem}",
                endpoint=self._endpoint,
            ) from exc
        state.reasks += 1
        state.extra.append({"role": "assistant", "content": content})
        state.extra.append(
            {
                "role": "user",
                "content": f"Your reply was not valid for the required JSON schema: {problem}\n"
                f"Reply again with the corrected JSON object only, no prose and no code fences.",
            }
        )
        # the reason, as the trace and the progress show it: what was wrong, not just that
        await self._notify(spec, state.calls, f"invalid output: {problem[:REASON_CHARS]}", 0.0)

    async def _notify(self, spec: CallSpec[T], attempt: int, reason: str, delay: float) -> None:
        log.warning("LLM call for %s failed on attempt %d (%s); retrying in %.2f s",
                    spec.role, attempt, reason, delay)
        if spec.on_retry is not None:
            await spec.on_retry(attempt, reason, delay)

    # --- what came back ---

    async def _content_of(self, spec: CallSpec[T], state: _CallState,
                          completion: ChatCompletion) -> str | None:
        """The reply's text; None when it was cut at the cap and is worth asking again with a
        larger one. A filtered, refused or twice cut-off reply raises."""
        choice = completion.choices[0]
        if choice.finish_reason == "content_filter":
            raise LLMContentFiltered(
                f"the content filter of {self._endpoint} stopped the completion",
                endpoint=self._endpoint,
            )
        refusal = getattr(choice.message, "refusal", None) or refusal_in_prose(
            choice.message.content or "")
        if refusal:
            raise LLMRefused(f"{spec.model} declined to answer: {refusal}", refusal=refusal,
                             endpoint=self._endpoint)
        if choice.finish_reason == "length":
            await self._cut_off(spec, state)
            return None
        return choice.message.content or ""

    async def _cut_off(self, spec: CallSpec[T], state: _CallState) -> None:
        """Lets the reply be asked again with twice the cap, once; then raises
        `LLMTruncated`."""
        profile = self.profile(spec.model)
        sent = profile.sends(profile.cap)
        if sent and state.sent_cap is not None and state.sent_cap < state.cap:
            raise LLMTruncated(
                f"cut off at the context window: {spec.model}'s {state.window}-token window "
                f"left {state.sent_cap} tokens for the reply beside the prompt",
                cap=state.sent_cap, endpoint=self._endpoint)
        if sent and state.cut_offs == 0 and state.cap < MAX_OUTPUT_CAP:
            state.cut_offs += 1
            reason = f"cut off at {state.cap} tokens"
            state.cap = min(state.cap * 2, MAX_OUTPUT_CAP)
            await self._notify(spec, state.calls, reason, 0.0)
            return
        if sent:
            message = (f"cut off at {state.cap} tokens: {spec.model} reached its output cap "
                       f"before finishing its reply, also after a retry with a larger cap")
        else:
            message = (f"cut off by the server: {spec.model} stopped at the server's own "
                       f"output limit before finishing its reply")
        raise LLMTruncated(message, cap=state.cap, endpoint=self._endpoint)

    def _account(self, spec: CallSpec[T], state: _CallState, completion: ChatCompletion) -> None:
        """Every reply is billed, whatever comes of it (re-asked, filtered, given up on); a
        gateway's error answered with 200 and no usage is no reply."""
        if completion.usage is None and not completion.choices:
            return
        usage = reported_usage(completion.usage)
        state.usage = state.usage + usage
        state.billed += 1
        state.model = completion.model or state.model
        if spec.meter is not None:
            spec.meter.bill(usage, qualified(self.name, completion.model or spec.model))
