"""The gateway against each provider's documented OpenAI-compatible behaviour (tests/fakes/
provider_kinds.py): Anthropic ignoring `response_format` and refusing in prose, Gemini's thoughts
outside `completion_tokens` and its list-wrapped errors, gateways' 200-with-error, 408 and
`usage.cost`, local servers' context windows and `<think>` blocks, an endpoint under pressure."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.errors import LLMBadRequest, LLMRefused, LLMTransientError
from engine.money.cost import price
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Meter, Prompt
from engine.schemas.procon import Position
from engine.settings import ModelPrice
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.provider_kinds import gemini_error

TOPIC = "Should we move billing to PostgreSQL?"


class Sleeps:
    """An injected `sleep` that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def position(model: str, **kw: Any) -> CallSpec[Position]:
    return CallSpec(model=model, schema=Position, role="pro", step="structured/opening/pro",
                    prompt=Prompt(system=kw.pop("system", "You argue FOR the proposition."),
                                  user=kw.pop("user", TOPIC)),
                    temperature=kw.pop("temperature", 0.7), reasoning_effort="low",
                    max_output_tokens=kw.pop("max_output_tokens", 4096), **kw)


@pytest.fixture
async def served() -> AsyncIterator[Callable[..., Any]]:
    """`served(provider=..., settings={...}, sleeps=...)`: a fake and a gateway on it."""
    opened: list[Any] = []

    async def make(*, settings: dict[str, Any] | None = None, sleep: Any = None,
                   **options: Any) -> tuple[FakeOpenAI, OpenAIGateway]:
        fake = FakeOpenAI(**{"replies": "typical", **options})
        await fake.start()
        extra = {"sleep": sleep} if sleep is not None else {}
        gateway = OpenAIGateway(gateway_settings(fake.base_url, **(settings or {})),
                                rng=random.Random(5), **extra)
        opened.extend([gateway, fake])
        return fake, gateway

    yield make
    for thing in opened:
        await (thing.aclose() if isinstance(thing, OpenAIGateway) else thing.stop())


# --- Anthropic ------------------------------------------------------------------------------

async def test_claude_is_asked_for_json_in_the_prompt_and_answers_first_time(
        served: Callable[..., Any]) -> None:
    """Anthropic ignores `response_format`: sent a json_schema only, Claude invented keys."""
    fake, gateway = await served(provider="anthropic")
    for _ in range(3):
        reply = await gateway.complete(position("claude-sonnet-4-5", temperature=1.4))
        assert reply.calls == 1
    body = fake.requests[0].body
    assert "response_format" not in body and '"properties"' in body["messages"][0]["content"]
    assert body["temperature"] == 1.0 and "reasoning_effort" not in body
    assert gateway.profile("claude-sonnet-4-5").output_mode == "prompt"


async def test_a_prose_refusal_is_a_refusal_not_three_paid_invalid_outputs(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(provider="anthropic")
    fake.refuse(TOPIC, "I can't help with building arguments on that topic.")
    with pytest.raises(LLMRefused) as caught:
        await gateway.complete(position("claude-sonnet-4-5"))
    assert "can't help" in caught.value.refusal
    assert fake.count() == 1


# --- Gemini ---------------------------------------------------------------------------------

async def test_gemini_thinks_with_an_effort_and_every_billed_token_is_counted(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(provider="gemini")
    meter = Meter()
    reply = await gateway.complete(position("gemini-2.5-flash", meter=meter))
    assert fake.requests[0].body["reasoning_effort"] == "low"
    billed = fake.billed()
    assert reply.usage.completion_tokens == billed["completion_tokens"] > 0
    assert reply.usage.reasoning_tokens == billed["reasoning_tokens"] > 0
    rate = ModelPrice(input=0.30, output=2.50)
    assert price(meter.usage, rate) == pytest.approx(
        fake.bill_usd(input=rate.input, output=rate.output), rel=0.02)


async def test_geminis_list_wrapped_429_keeps_its_message_and_its_retry_delay(
        served: Callable[..., Any]) -> None:
    sleeps = Sleeps()
    fake, gateway = await served(provider="gemini", sleep=sleeps)
    said = gemini_error(429, "Quota exceeded for metric: generate_content_free_tier_requests",
                        "RESOURCE_EXHAUSTED", retry_delay=7)
    fake.fail(TOPIC, 429, body=said, times=None)   # type: ignore[arg-type]
    with pytest.raises(LLMTransientError) as caught:
        await gateway.complete(position("gemini-2.5-flash"))
    assert "Quota exceeded for metric" in str(caught.value)
    assert sleeps.delays and all(delay >= 7 for delay in sleeps.delays)


async def test_the_free_tiers_rate_limit_is_waited_out(served: Callable[..., Any]) -> None:
    """10 requests a minute, scaled down: 3 a second, 6 calls at once, each completes."""
    fake, gateway = await served(provider="gemini", rate_limit=(3, 1.0),
                                 settings={"overload_wait": 20.0, "max_retries": 1})
    replies = await asyncio.gather(*(gateway.complete(position("gemini-2.5-flash",
                                                                user=f"{TOPIC} ({n})"))
                                     for n in range(6)))
    assert len(replies) == 6 and fake.count() > 6


async def test_a_versioned_base_url_is_not_told_to_add_v1(served: Callable[..., Any]) -> None:
    fake, _ = await served(provider="gemini")
    wrong = OpenAIGateway(gateway_settings(fake.base_url.replace("/v1", "/v1beta/elsewhere")))
    try:
        with pytest.raises(LLMBadRequest) as caught:
            await wrong.complete(position("gemini-2.5-flash"))
    finally:
        await wrong.aclose()
    assert caught.value.status == 404 and "did you mean" not in str(caught.value)


# --- gateways -------------------------------------------------------------------------------

async def test_a_gateways_200_with_an_error_is_sent_again_not_re_asked(
        served: Callable[..., Any]) -> None:
    sleeps = Sleeps()
    fake, gateway = await served(provider="gateway", sleep=sleeps,
                                 settings={"provider_kind": "gateway"})
    fake.gateway_error(TOPIC, 502)
    fake.fail(TOPIC, 408, body={"error": {"message": "Request timed out", "code": 408}})
    reply = await gateway.complete(position("openai/gpt-4o-mini"))
    assert reply.calls == 1 and fake.count() == 3
    assert len(fake.requests[-1].body["messages"]) == 2, "not re-asked as invalid output"


async def test_a_gateways_200_with_a_client_error_fails_at_once(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(provider="gateway", settings={"provider_kind": "gateway"})
    fake.gateway_error(TOPIC, 400, "Provider returned error: invalid model")
    with pytest.raises(LLMBadRequest, match="invalid model"):
        await gateway.complete(position("openai/gpt-4o-mini"))
    assert fake.count() == 1


async def test_a_gateways_usage_cost_is_the_recorded_cost(served: Callable[..., Any]) -> None:
    fake, gateway = await served(provider="gateway", settings={"provider_kind": "gateway"})
    meter = Meter()
    await gateway.complete(position("meta-llama/llama-3.1-8b-instruct", meter=meter))
    assert fake.requests[0].body["messages"][0]["content"].count('"properties"') >= 1
    assert meter.usage.cost_usd == pytest.approx(fake.gateway_bill()) and fake.gateway_bill()
    assert price(meter.usage, ModelPrice(input=2.5, output=10)) == pytest.approx(
        fake.gateway_bill())


# --- local servers --------------------------------------------------------------------------

LONG_SYSTEM = "You argue FOR the proposition, citing the record in detail. " * 350  # ~5.2k tokens


@pytest.mark.parametrize("provider", ["vllm", "llamacpp"])
async def test_a_local_servers_window_is_asked_and_the_cap_fits_in_it(
        served: Callable[..., Any], provider: str) -> None:
    fake, gateway = await served(provider=provider, context_window=8192,
                                 serves=("qwen2.5-7b-instruct",),
                                 settings={"provider_kind": "local"})
    reply = await gateway.complete(position("qwen2.5-7b-instruct", system=LONG_SYSTEM,
                                            max_output_tokens=4294))
    assert reply.calls == 1 and fake.count() == 1
    assert await gateway.window("qwen2.5-7b-instruct") == 8192
    assert fake.requests[0].body["max_tokens"] < 4294


async def test_a_window_named_in_a_400_is_learned_and_kept(served: Callable[..., Any]) -> None:
    """vLLM behind an address that does not say it is local: its 400 names the window."""
    fake, gateway = await served(provider="vllm", context_window=8192)
    reply = await gateway.complete(position("Qwen/Qwen2.5-7B-Instruct", system=LONG_SYSTEM,
                                            max_output_tokens=4294))
    assert reply.value.claims and fake.requests[0].outcome == "rejected 400"
    assert fake.count() == 2
    await gateway.complete(position("Qwen/Qwen2.5-7B-Instruct", system=LONG_SYSTEM,
                                    max_output_tokens=4294))
    assert fake.count() == 3, "the window is known now: no second 400"


async def test_a_think_block_with_braces_does_not_break_the_json(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(provider="ollama")
    for n in range(3):
        reply = await gateway.complete(position("deepseek-r1:8b", user=f"{TOPIC} ({n})"))
        assert reply.calls == 1
    assert all("<think>" in str(r.body) or r.outcome == "reply" for r in fake.requests)
    assert fake.count() == 3


# --- an endpoint under pressure -------------------------------------------------------------

@pytest.mark.parametrize("hiccup", ["empty_choices", "null_content"])
async def test_an_empty_answer_is_the_providers_fault_and_sent_again(
        served: Callable[..., Any], hiccup: str) -> None:
    sleeps = Sleeps()
    fake, gateway = await served(sleep=sleeps)
    getattr(fake, hiccup)(TOPIC)
    reply = await gateway.complete(position("gpt-4o-mini"))
    assert fake.count() == 2 and len(fake.requests[1].body["messages"]) == 2
    assert reply.calls == 2 and len(sleeps.delays) == 1   # billed both, backed off once


async def test_a_proxys_page_sent_with_200_is_sent_again_not_a_crash(
        served: Callable[..., Any]) -> None:
    """A captive portal or misrouted proxy answers 200 with HTML: the provider's fault, retried
    (nothing is billed for it), never an AttributeError inside the gateway."""
    sleeps = Sleeps()
    fake, gateway = await served(sleep=sleeps)
    fake.proxy_page(TOPIC)
    reply = await gateway.complete(position("gpt-4o-mini"))
    assert [r.outcome for r in fake.requests] == ["proxy_page", "reply"]
    assert reply.value.claims and reply.attempts == 2 and len(sleeps.delays) == 1


async def test_a_proxy_page_every_time_ends_as_a_transient_error(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(sleep=Sleeps())
    fake.proxy_page(TOPIC, times=None)
    with pytest.raises(LLMTransientError, match=r"not a chat completion \(text/html"):
        await gateway.complete(position("gpt-4o-mini"))


async def test_a_burst_of_503s_is_waited_out_within_the_overload_budget(
        served: Callable[..., Any]) -> None:
    sleeps = Sleeps()
    fake, gateway = await served(sleep=sleeps, settings={
        "overload_wait": 30.0, "backoff_base": 1.0, "backoff_cap": 8.0})
    fake.fail(TOPIC, 503, times=6)
    reply = await gateway.complete(position("gpt-4o-mini"))
    assert reply.attempts == 7 and sum(sleeps.delays) <= 30.0


async def test_an_exhausted_quota_is_not_waited_out(served: Callable[..., Any]) -> None:
    """A 429 that says the account is out of credit fails at once, not after the overload wait."""
    sleeps = Sleeps()
    fake, gateway = await served(sleep=sleeps, settings={"overload_wait": 30.0})
    fake.fail(TOPIC, 429, times=None, body={"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
    with pytest.raises(LLMBadRequest, match="out of quota"):
        await gateway.complete(position("gpt-4o-mini"))
    assert fake.count() == 1 and not sleeps.delays
