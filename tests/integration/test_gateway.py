"""The OpenAI gateway against a fake OpenAI-compatible server on loopback: every row of the error
matrix, the three output modes, usage accounting and concurrency, with the real `openai` client.

Backoff waits go through an injected recording `sleep`, so no assertion depends on the wall clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel, Field

from engine.domain import Usage
from engine.errors import (
    ConfigurationError,
    LLMAuthError,
    LLMBadRequest,
    LLMContentFiltered,
    LLMInvalidOutput,
    LLMTimeout,
    LLMTransientError,
)
from engine.provider.backoff import backoff_delay, parse_retry_after
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Prompt
from engine.provider.replies import extract_json, portable_schema
from engine.settings import EngineSettings
from tests.fakes import fixtures
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

fake_openai = fixtures.fake_openai  # the shared fixture, until conftest imports it

SECRET = "sk-test-DO-NOT-LEAK-0123456789"
TOPIC = "Should we move billing to PostgreSQL?"


class Argument(BaseModel):
    """One side's opening argument."""

    stance: Literal["pro", "con"]
    claim: str
    strength: int = Field(ge=1, le=10)
    evidence: list[str]
    caveat: str | None = None


VALID = {"stance": "pro", "claim": "it scales", "strength": 7, "evidence": ["x"], "caveat": None}


class Sleeps:
    """An injected `sleep` that records the delays it was asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class Retries:
    """A `CallSpec.on_retry` callback that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, float]] = []

    async def __call__(self, attempt: int, reason: str, delay: float) -> None:
        self.calls.append((attempt, reason, delay))


def spec(
    *, timeout: float = 5.0, temperature: float | None = None, **kw: Any
) -> CallSpec[Argument]:
    return CallSpec(
        model="gpt-4o-mini",
        prompt=Prompt(system="You argue FOR the proposition.", user=TOPIC),
        schema=Argument,
        role="structured/opening/pro",
        temperature=temperature,
        timeout=timeout,
        **kw,
    )


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make_gateway(
    fake_openai: FakeOpenAI, sleeps: Sleeps
) -> AsyncIterator[Callable[..., OpenAIGateway]]:
    """Builds gateways on the fake server with settings overrides; closes them afterwards."""
    made: list[OpenAIGateway] = []

    def make(**overrides: Any) -> OpenAIGateway:
        settings = gateway_settings(fake_openai.base_url, **overrides)
        gateway = OpenAIGateway(settings, sleep=sleeps, rng=random.Random(7))
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        await gateway.aclose()


@pytest.fixture
def gateway(make_gateway: Callable[..., OpenAIGateway]) -> OpenAIGateway:
    return make_gateway()


# --- success and request shapes ---------------------------------------------------------------


async def test_generated_reply_validates_and_reports_usage(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    reply = await gateway.complete(spec())

    assert isinstance(reply.value, Argument)
    assert reply.attempts == 1
    assert reply.model == "gpt-4o-mini-2024-07-18"  # the snapshot the API answers with
    (request,) = fake_openai.requests
    assert request.usage is not None
    assert reply.usage == Usage(
        prompt_tokens=request.usage["prompt_tokens"],
        completion_tokens=request.usage["completion_tokens"],
    )
    assert request.authorized and request.step == "structured/opening/pro"
    assert gateway.rehearsal is False


async def test_json_schema_mode_sends_the_sdk_strict_schema(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    await gateway.complete(spec(temperature=0.3))

    body = fake_openai.requests[0].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Argument",
            "schema": portable_schema(
                openai.pydantic_function_tool(Argument)["function"]["parameters"]),
            "strict": True,
        },
    }
    # the portable subset: no numeric or length keywords, the range said in words instead
    sent = body["response_format"]["json_schema"]["schema"]
    assert "minimum" not in json.dumps(sent) and "maxLength" not in json.dumps(sent)
    assert sent["properties"]["strength"]["description"] == "an integer from 1 to 10"
    assert sent["additionalProperties"] is False
    assert sorted(sent["required"]) == sorted(Argument.model_fields)
    assert body["temperature"] == 0.3
    assert body["messages"][0] == {"role": "system", "content": "You argue FOR the proposition."}
    assert body["messages"][1] == {"role": "user", "content": TOPIC}


async def test_temperature_is_left_out_when_none(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    await gateway.complete(spec(temperature=None))
    assert "temperature" not in fake_openai.requests[0].body


async def test_json_object_mode_puts_the_schema_in_the_system_prompt(
    make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI
) -> None:
    reply = await make_gateway(output_mode="json_object").complete(spec())

    body = fake_openai.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    schema = portable_schema(openai.pydantic_function_tool(Argument)["function"]["parameters"])
    assert json.dumps(schema, separators=(",", ":")) in fake_openai.requests[0].system
    assert isinstance(reply.value, Argument)  # the fake generated it from the prompt's schema


async def test_prompt_mode_sends_no_response_format(
    make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(TOPIC, VALID)
    reply = await make_gateway(output_mode="prompt").complete(spec())

    body = fake_openai.requests[0].body
    assert "response_format" not in body
    assert "Reply with one JSON object only" in fake_openai.requests[0].system
    assert '"claim"' in fake_openai.requests[0].system
    assert reply.value == Argument.model_validate(VALID)


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + json.dumps(VALID) + "\n```",
        "Here is my answer:\n```\n" + json.dumps(VALID, indent=2) + "\n```\nHope it helps.",
        "Sure. " + json.dumps(VALID) + " That is all.",
    ],
    ids=["fenced", "fenced-with-prose", "prose-around"],
)
async def test_fenced_or_wrapped_json_is_accepted(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, content: str
) -> None:
    fake_openai.script(TOPIC, content)
    reply = await gateway.complete(spec())
    assert reply.value == Argument.model_validate(VALID)
    assert reply.attempts == 1


# --- transient errors ------------------------------------------------------------------------


async def test_429_retry_after_seconds_is_honoured(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.fail(TOPIC, 429, headers={"Retry-After": "2"})
    retries = Retries()

    reply = await gateway.complete(spec(on_retry=retries))

    assert reply.attempts == 2
    assert len(sleeps.delays) == 1 and sleeps.delays[0] >= 2.0
    assert retries.calls == [(1, "HTTP 429", sleeps.delays[0])]
    assert [r.outcome for r in fake_openai.requests] == ["fail 429", "reply"]


async def test_429_retry_after_ms_is_honoured(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.fail(TOPIC, 429, headers={"retry-after-ms": "1500"})
    await gateway.complete(spec())
    assert sleeps.delays[0] >= 1.5


async def test_retry_after_is_capped_at_a_minute(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.fail(TOPIC, 429, headers={"Retry-After": "3600"})
    await gateway.complete(spec())
    assert sleeps.delays == [60.0]


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_are_retried_then_succeed(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps, status: int
) -> None:
    fake_openai.fail(TOPIC, status, times=2)

    reply = await gateway.complete(spec())

    assert reply.attempts == 3
    assert fake_openai.count(TOPIC) == 3
    assert len(sleeps.delays) == 2


async def test_retries_exhausted_raise_transient_after_one_plus_max_retries(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.fail(TOPIC, 503, times=100)

    with pytest.raises(LLMTransientError) as caught:
        await gateway.complete(spec())

    assert fake_openai.count(TOPIC) == 1 + 4
    assert caught.value.status == 503
    # 0.01, 0.02, 0.04, 0.05 (capped), each jittered into [0.5, 1.0] of itself
    nominal = [0.01, 0.02, 0.04, 0.05]
    assert len(sleeps.delays) == 4
    for delay, expected in zip(sleeps.delays, nominal, strict=True):
        assert 0.5 * expected <= delay <= expected


async def test_max_retries_setting_is_respected(
    make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(TOPIC, 500, times=100)
    with pytest.raises(LLMTransientError):
        await make_gateway(max_retries=1).complete(spec())
    assert fake_openai.count() == 2


async def test_connection_reset_is_retried(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.reset_connection(TOPIC)
    retries = Retries()

    reply = await gateway.complete(spec(on_retry=retries))

    assert reply.attempts == 2
    assert [r.outcome for r in fake_openai.requests] == ["reset", "reply"]
    assert retries.calls[0][:2] == (1, "connection error")


async def test_connection_refused_is_transient(sleeps: Sleeps) -> None:
    async with FakeOpenAI() as fake:
        base_url = fake.base_url
    gateway = OpenAIGateway(gateway_settings(base_url, max_retries=2), sleep=sleeps)
    try:
        with pytest.raises(LLMTransientError, match="could not reach"):
            await gateway.complete(spec())
    finally:
        await gateway.aclose()
    assert len(sleeps.delays) == 2


# --- timeouts ---------------------------------------------------------------------------------


async def test_timeout_is_retried_once_then_succeeds(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, sleeps: Sleeps
) -> None:
    fake_openai.hang(TOPIC, 1.0)
    retries = Retries()

    reply = await gateway.complete(spec(timeout=0.2, on_retry=retries))

    assert reply.attempts == 2
    assert retries.calls == [(1, "timeout", 0.0)]
    assert sleeps.delays == []
    async with asyncio.timeout(5):  # the hung request ends at the fake: its client had gone
        while fake_openai.in_flight:
            await asyncio.sleep(0.02)
    assert [r.outcome for r in fake_openai.requests] == ["hung", "reply"]


async def test_second_timeout_raises_llm_timeout(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.hang(TOPIC, 1.0, times=2)

    with pytest.raises(LLMTimeout):
        await gateway.complete(spec(timeout=0.2))

    assert fake_openai.count(TOPIC) == 2


# --- invalid output ---------------------------------------------------------------------------


async def test_invalid_json_is_reasked_with_the_error(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.invalid_json(TOPIC, content="I would rather not use JSON.")
    retries = Retries()

    reply = await gateway.complete(spec(on_retry=retries))

    assert reply.attempts == 2
    second = fake_openai.requests[1].messages
    assert second[2] == {"role": "assistant", "content": "I would rather not use JSON."}
    assert second[3]["role"] == "user"
    assert "Invalid JSON" in second[3]["content"]
    assert "corrected JSON object only" in second[3]["content"]
    assert retries.calls == [(1, "invalid output: <root>: Invalid JSON: expected ident at line "
                                 "1 column 2", 0.0)]   # what was wrong, in the trace too


async def test_schema_invalid_reply_names_the_fields(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.invalid_json(TOPIC, content='{"stance": "maybe", "strength": 11}')

    await gateway.complete(spec())

    reask = fake_openai.requests[1].last_user
    for field_name in ("stance", "strength", "claim", "evidence"):
        assert field_name in reask
    assert len(reask) < 1200


async def test_invalid_output_exhausted_after_two_reasks(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.invalid_json(TOPIC, times=3)

    with pytest.raises(LLMInvalidOutput, match="3 attempts"):
        await gateway.complete(spec())

    assert fake_openai.count() == 3
    assert len(fake_openai.requests[2].messages) == 6  # system, user, 2 x (bad reply, re-ask)


async def test_usage_is_summed_over_every_billed_attempt(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(TOPIC, 429)
    fake_openai.invalid_json(TOPIC)

    reply = await gateway.complete(spec())

    billed = [r.usage for r in fake_openai.requests if r.usage is not None]
    assert reply.attempts == 3 and len(billed) == 2
    assert reply.usage == Usage(
        prompt_tokens=sum(u["prompt_tokens"] for u in billed),
        completion_tokens=sum(u["completion_tokens"] for u in billed),
    )
    assert reply.usage.prompt_tokens > billed[0]["prompt_tokens"]


# --- errors that are not retried --------------------------------------------------------------


async def test_content_filter_finish_reason(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.content_filter(TOPIC)
    with pytest.raises(LLMContentFiltered):
        await gateway.complete(spec())
    assert fake_openai.count() == 1


@pytest.mark.parametrize(
    "error",
    [
        {
            "message": "The prompt was filtered.",
            "type": "invalid_request_error",
            "code": "content_filter",
        },
        {
            "message": "Your request was rejected as a result of our safety system.",
            "type": "invalid_request_error",
            "code": None,
        },
        {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "type": None,
            "code": "content_policy_violation",
        },
    ],
    ids=["code", "safety-message", "azure-policy"],
)
async def test_content_policy_400_is_content_filtered(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, error: dict[str, Any]
) -> None:
    fake_openai.fail(TOPIC, 400, body={"error": error})
    with pytest.raises(LLMContentFiltered) as caught:
        await gateway.complete(spec())
    assert caught.value.status == 400
    assert fake_openai.count() == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_fail_fast_and_name_the_endpoint_not_the_key(
    make_gateway: Callable[..., OpenAIGateway],
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_openai.fail(TOPIC, 429)
    fake_openai.fail(TOPIC, status)

    with pytest.raises(LLMAuthError) as caught:
        await make_gateway(openai_api_key=SECRET).complete(spec())

    message = str(caught.value)
    assert fake_openai.base_url in message
    assert caught.value.endpoint == fake_openai.base_url
    assert "OPENAI_API_KEY" in message and "OPENAI_BASE_URL" in message
    assert caught.value.status == status
    assert SECRET not in message and SECRET not in caplog.text
    assert fake_openai.count() == 2  # the 429 was retried; the auth error was not


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_other_4xx_is_a_bad_request(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.fail(TOPIC, status)
    with pytest.raises(LLMBadRequest) as caught:
        await gateway.complete(spec())
    assert caught.value.status == status
    assert fake_openai.count() == 1


async def test_parameter_named_safety_is_not_a_content_filter(
    gateway: OpenAIGateway, fake_openai: FakeOpenAI
) -> None:
    error = {"message": "Invalid type for 'safety_identifier'.", "code": "invalid_type"}
    fake_openai.fail(TOPIC, 400, body={"error": error})
    with pytest.raises(LLMBadRequest):
        await gateway.complete(spec())


# --- configuration and concurrency ------------------------------------------------------------


def test_no_key_and_no_endpoint_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIGateway(EngineSettings(openai_api_key=None, openai_base_url=None))


async def test_local_server_without_a_key_gets_a_placeholder(fake_openai: FakeOpenAI) -> None:
    gateway = OpenAIGateway(gateway_settings(fake_openai.base_url, openai_api_key=None))
    try:
        reply = await gateway.complete(spec())
    finally:
        await gateway.aclose()
    assert isinstance(reply.value, Argument)
    assert fake_openai.requests[0].authorized


async def test_calls_run_concurrently() -> None:
    async with FakeOpenAI(latency=0.2) as fake:
        gateway = OpenAIGateway(gateway_settings(fake.base_url))
        try:
            replies = await asyncio.gather(*(gateway.complete(spec()) for _ in range(5)))
        finally:
            await gateway.aclose()
    assert len(replies) == 5
    assert fake.max_in_flight == 5


# --- pure helpers -----------------------------------------------------------------------------

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Thu, 01 Jan 2026 12:00:07 GMT"}, 7.0),
        ({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


@pytest.mark.parametrize(
    ("retry", "retry_after", "low", "high"),
    [
        (0, None, 0.5, 1.0),
        (1, None, 1.0, 2.0),
        (3, None, 4.0, 8.0),
        (6, None, 4.0, 8.0),  # capped at backoff_cap
        (0, 5.0, 5.0, 5.0),  # the server's hint wins when larger
        (0, 600.0, 60.0, 60.0),  # but never more than a minute
    ],
)
def test_backoff_delay(retry: int, retry_after: float | None, low: float, high: float) -> None:
    delay = backoff_delay(retry, base=1.0, cap=8.0, retry_after=retry_after, rng=random.Random(1))
    assert low <= delay <= high


def test_backoff_delay_is_deterministic_with_a_seeded_rng() -> None:
    def schedule(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [backoff_delay(n, base=1.0, cap=8.0, retry_after=None, rng=rng) for n in range(4)]

    assert schedule(3) == schedule(3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('```\n{"a": {"b": 2}}\n```', '{"a": {"b": 2}}'),
        ('Answer: {"a": 1} -- done', '{"a": 1}'),
        ("no json here", "no json here"),
    ],
)
def test_extract_json(text: str, expected: str) -> None:
    assert extract_json(text) == expected


async def test_each_request_carries_its_own_idempotency_key_not_the_sdks(
    gateway: OpenAIGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK makes a key (a uuid4) for any request it is not given one for: the gateway gives
    its own, unique to each request, so the SDK never makes one."""
    sent: list[str | None] = []
    client = gateway._client   # the SDK's own client, as the gateway built it
    build = client._build_request

    def building(options: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(options.idempotency_key)
        return build(options, *args, **kwargs)

    def made_by_the_sdk() -> str:
        raise AssertionError("the SDK made an idempotency key")

    monkeypatch.setattr(client, "_build_request", building)
    monkeypatch.setattr(client, "_idempotency_key", made_by_the_sdk)
    await gateway.complete(spec())
    await gateway.complete(spec())
    assert len(sent) == 2 and len(set(sent)) == 2
    assert all(key is not None and key.startswith("dialectic-") for key in sent)
