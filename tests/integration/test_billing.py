"""Every billed reply counts: a reply that failed validation and was re-asked or given up on, or
that the content filter withheld, is cost and a call. The calls a debate records equal the
requests the provider answered, and its cost is what their usage costs."""

from __future__ import annotations

import pytest

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, Usage
from engine.errors import LLMInvalidOutput
from engine.money.cost import price
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Meter, Prompt
from engine.schemas.procon import Verdict
from engine.settings import EngineSettings, ModelPrice
from engine.vocabulary import StepStatus
from tests.fakes.fixtures import DEFAULT_MODEL, gateway_settings
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should we move billing to PostgreSQL?"
RATE = ModelPrice(input=1.0, output=2.0)


def _billed_usd(fake: FakeOpenAI) -> float:
    billed = fake.billed()
    return price(Usage(prompt_tokens=billed["prompt_tokens"],
                       completion_tokens=billed["completion_tokens"]), RATE)


async def test_a_call_given_up_on_still_bills_every_reply(fake_openai: FakeOpenAI) -> None:
    fake_openai.invalid_json(TOPIC, times=3)
    gateway = OpenAIGateway(gateway_settings(fake_openai.base_url))
    meter = Meter()
    try:
        with pytest.raises(LLMInvalidOutput):
            await gateway.complete(CallSpec(model="m", prompt=Prompt("judge", TOPIC),
                                            schema=Verdict, role="judge", meter=meter))
    finally:
        await gateway.aclose()
    billed = fake_openai.billed()
    assert meter.calls == fake_openai.answered() == 3
    assert meter.usage == Usage(**billed)


async def _run(settings: EngineSettings, mode: str = "simple") -> tuple[float, int, list[str]]:
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode=mode))
    gateway = OpenAIGateway(settings)
    try:
        result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                  store=MemoryCheckpointStore(), sink=MemoryEventSink())
    finally:
        await gateway.aclose()
    return result.cost.usd, result.cost.calls, [d["key"] for d in result.degraded]


@pytest.mark.parametrize("fault", ["invalid", "filtered", "rate_limited"])
async def test_recorded_calls_and_cost_are_what_the_provider_answered(
        fake_openai: FakeOpenAI, fault: str) -> None:
    settings = gateway_settings(fake_openai.base_url, prices={DEFAULT_MODEL: RATE})
    if fault == "invalid":          # every judge reply invalid: re-asked twice, then degraded
        fake_openai.invalid_json("impartial debate judge", times=3)
    elif fault == "filtered":       # a billed reply the filter withheld
        fake_openai.content_filter("arguing AGAINST")
    else:                           # a refusal the provider does not bill, then a reply
        fake_openai.fail("arguing FOR", 429, times=2)
    usd, calls, degraded = await _run(settings)
    assert calls == fake_openai.answered()
    assert usd == pytest.approx(_billed_usd(fake_openai), abs=1e-6)
    if fault == "invalid":
        assert degraded == ["simple/verdict"] and fake_openai.answered("impartial") == 3
    if fault == "rate_limited":
        assert fake_openai.count() == fake_openai.answered() + 2


async def test_a_filtered_step_is_stored_with_its_bill(fake_openai: FakeOpenAI) -> None:
    settings = gateway_settings(fake_openai.base_url, prices={DEFAULT_MODEL: RATE})
    fake_openai.content_filter("arguing AGAINST")
    store = MemoryCheckpointStore()
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple", rounds=0))
    gateway = OpenAIGateway(settings)
    try:
        await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway, store=store,
                         sink=MemoryEventSink())
    finally:
        await gateway.aclose()
    stored = await store.get("d1", "simple/opening/con")
    assert stored is not None and stored.status is StepStatus.FILTERED
    assert stored.calls == 1 and stored.cost_usd > 0 and stored.usage.prompt_tokens > 0
