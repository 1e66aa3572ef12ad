"""The gateway against a provider that answers as real ones do (tests/fakes: realistic replies,
reasoning models' rules, refusals, output caps, prompt caching, DeepSeek's JSON mode)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.errors import LLMRefused, LLMTruncated
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Meter, Prompt
from engine.schemas.procon import Position, Scorecard
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

LONG_SYSTEM = "You are an advocate arguing FOR the proposition. " * 160  # past 1,024 tokens


def position(model: str, **kw: Any) -> CallSpec[Position]:
    return CallSpec(model=model, schema=Position, role="pro", step="structured/opening/pro",
                    prompt=Prompt(system=kw.pop("system", "You argue FOR the proposition."),
                                  user="Should we move billing to PostgreSQL?"), **kw)


@pytest.fixture
async def served() -> AsyncIterator[Callable[..., Any]]:
    """Starts fakes with the given options and gateways on them; all closed afterwards."""
    opened: list[Any] = []

    async def make(**options: Any) -> tuple[FakeOpenAI, OpenAIGateway]:
        fake = FakeOpenAI(**options)
        await fake.start()
        gateway = OpenAIGateway(gateway_settings(fake.base_url))
        opened.extend([gateway, fake])
        return fake, gateway

    yield make
    for thing in opened:
        await (thing.aclose() if isinstance(thing, OpenAIGateway) else thing.stop())


@pytest.mark.parametrize("replies", ["typical", "verbose"])
@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-5-mini", "o4-mini"])
async def test_long_replies_validate_first_time(served: Callable[..., Any], replies: str,
                                                model: str) -> None:
    fake, gateway = await served(replies=replies, seed=3)
    for _ in range(3):
        reply = await gateway.complete(position(model, temperature=0.7, reasoning_effort="low",
                                                max_output_tokens=4096))
        assert reply.calls == 1, "never re-asked for its length"
    assert len(fake.requests) == 3  # no 400: each model got the parameters it accepts
    longest = max(len(c.claim) for c in reply.value.claims)
    assert longest > 100 and len(reply.value.claims) >= 3


async def test_reasoning_tokens_are_read_and_billed(served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="typical")
    meter = Meter()
    reply = await gateway.complete(position("gpt-5-mini", reasoning_effort="low",
                                            max_output_tokens=8192, meter=meter))
    billed = fake.billed()
    assert reply.usage.reasoning_tokens == billed["reasoning_tokens"] > 0
    assert reply.usage.completion_tokens == billed["completion_tokens"]
    assert meter.usage == reply.usage
    assert reply.model == "gpt-5-mini-2025-08-07"  # the snapshot the API answers with


async def test_cached_prompt_tokens_are_read(served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="short")
    first = await gateway.complete(position("gpt-4o-mini", system=LONG_SYSTEM))
    second = await gateway.complete(position("gpt-4o-mini", system=LONG_SYSTEM))
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens >= 1024
    assert second.usage.cached_tokens == fake.requests[1].usage["cached_tokens"]


async def test_a_refusal_is_the_models_words_and_is_not_asked_again(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="typical")
    fake.refuse("billing", text="I'm sorry, but I can't help with that.")
    meter = Meter()
    with pytest.raises(LLMRefused) as caught:
        await gateway.complete(position("gpt-4o-mini", meter=meter))
    assert caught.value.refusal == "I'm sorry, but I can't help with that."
    assert len(fake.requests) == 1 and meter.calls == 1  # billed once, never re-asked


async def test_a_reply_cut_at_its_cap_is_sent_again_with_twice_the_cap(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="verbose")
    # verbose replies run 650-1,240 tokens: always cut at 640, never at 1,280
    reply = await gateway.complete(position("gpt-4o-mini", max_output_tokens=640))
    first, second = (r.body for r in fake.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (640, 1280)
    assert fake.requests[0].outcome == "reply" and reply.calls == 2
    assert reply.value.claims


async def test_a_reply_cut_twice_is_truncated_not_invalid(served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="verbose")
    meter = Meter()
    with pytest.raises(LLMTruncated, match="cut off at 100 tokens") as caught:
        await gateway.complete(position("gpt-5-mini", max_output_tokens=50,
                                        reasoning_effort="medium", meter=meter))
    assert caught.value.cap == 100
    assert [r.body["max_completion_tokens"] for r in fake.requests] == [50, 100]
    assert meter.calls == 2  # both cut replies were billed


async def test_deepseek_speaks_json_mode_with_fenced_replies(
        served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="typical", provider="deepseek")
    for _ in range(4):
        reply = await gateway.complete(CallSpec(
            model="deepseek-chat", schema=Scorecard, role="judge/technical",
            prompt=Prompt(system="You judge a debate.", user="Score both positions.")))
        assert 1 <= reply.value.position_a.logic <= 10
    assert all(r.body["response_format"] == {"type": "json_object"} for r in fake.requests)
    assert all("max_tokens" in r.body for r in fake.requests)
    assert len(fake.requests) == 4


async def test_an_unknown_model_on_deepseek_learns_json_mode(served: Callable[..., Any]) -> None:
    fake, gateway = await served(replies="typical", provider="deepseek")
    await gateway.complete(position("house-model"))
    await gateway.complete(position("house-model"))
    kinds = [r.body["response_format"]["type"] for r in fake.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
