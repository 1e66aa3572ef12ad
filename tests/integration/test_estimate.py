"""The estimate counts what a request really sends: its topic, context, policy and personas in
every prompt that carries them, each call priced with the model it will really use. Against the
real gateway and the fake provider, no mode's estimate falls short of what the run billed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from engine.core.debate import Prepared, estimate_for, prepare, run_debate
from engine.domain import DebateRequest, Usage
from engine.money.cost import price, token_bound
from engine.money.sizing import SizeBook
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.settings import EngineSettings, ModelPrice, PresetSpec
from engine.vocabulary import MAX_CONTEXT_CHARS, MAX_POLICY_CHARS, Mode
from tests.fakes.fixtures import DEFAULT_MODEL, gateway_settings
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should we move billing to PostgreSQL?"
CHEAP = ModelPrice(input=0.15, output=0.60)
DEAR = ModelPrice(input=30.0, output=60.0)


def live(**extra: Any) -> EngineSettings:
    return EngineSettings(openai_api_key=SecretStr("x"), openai_base_url="http://127.0.0.1:9",
                          prices={DEFAULT_MODEL: CHEAP, "dear": DEAR}, **extra)


def prepared(settings: EngineSettings | None = None, **request: Any) -> Prepared:
    return prepare(settings or live(), DebateRequest(topic=TOPIC, **request))


@pytest.mark.parametrize(("text", "bound"), [
    ("", 0), ("abc", 1), ("abcd", 2), ("x" * 3000, 1000),
    ("é", 2), ("日本", 6), ("🙂", 4), ("ab日", 1 + 3),
])
def test_token_bound_is_conservative(text: str, bound: int) -> None:
    assert token_bound(text) == bound


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("field", ["context", "policy"])
def test_the_request_text_is_counted_in_every_prompt_that_carries_it(mode: Mode,
                                                                     field: str) -> None:
    size = MAX_CONTEXT_CHARS if field == "context" else MAX_POLICY_CHARS
    text = "lorem ipsum " * (size // 12)
    extra = {"context": text} if field == "context" else {"options": {"policy": text}}
    base, big = prepared(mode=mode), prepared(mode=mode, **extra)
    grown = {c.key: c.prompt_tokens - b.prompt_tokens
             for c, b in zip(big.plan.calls, base.plan.calls, strict=True)}
    carrying = [k for k, g in grown.items() if g >= token_bound(text)]
    # the policy is in every prompt; the context in every one but the judges' and the grader's
    assert len(carrying) >= (len(grown) if field == "policy" else len(grown) // 2)
    settings = live()
    more = estimate_for(settings, big).usd - estimate_for(settings, base).usd
    assert more >= len(carrying) * price(Usage(prompt_tokens=token_bound(text)), CHEAP) * 0.999


def test_personas_are_counted() -> None:
    persona = "a very long-winded persona " * 400
    settings = live(presets={"wordy": PresetSpec(mode=Mode.SIMPLE, pro_persona=persona)})
    wordy = prepare(settings, DebateRequest(topic=TOPIC, preset="wordy"))
    plain = prepare(settings, DebateRequest(topic=TOPIC, mode="simple"))
    pro = [c for c in wordy.plan.calls if c.role == "pro"]
    assert pro and all(c.prompt_tokens >= token_bound(persona) for c in pro)
    assert estimate_for(settings, wordy).usd > estimate_for(settings, plain).usd


def test_each_call_is_priced_with_the_model_it_will_use() -> None:
    settings = live()
    base = prepared(settings, mode="consensus")
    dear_judges = prepared(settings, mode="consensus", options={"role_models": {"judge": "dear"}})
    judge_calls = [c for c in dear_judges.plan.calls if c.role.startswith("judge")]
    # the prior at each role's reasoning effort (the default model reasons; "dear" does not)
    sizes = SizeBook(effort_for=settings.effort_for)
    expected = estimate_for(settings, base).usd + sum(
        price(sizes.usage(c, "dear", "typical"), DEAR)
        - price(sizes.usage(c, DEFAULT_MODEL, "typical"), CHEAP) for c in judge_calls)
    assert estimate_for(settings, dear_judges).usd == pytest.approx(expected, rel=1e-4)
    assert estimate_for(settings, dear_judges).usd > 20 * estimate_for(settings, base).usd / 10


def test_a_panelists_own_model_is_priced() -> None:
    settings = live()
    base = estimate_for(settings, prepared(settings, mode="panel", judges=2)).usd
    dear = estimate_for(settings, prepared(settings, mode="panel", judges=2,
                                           options={"models": ["dear", ""]})).usd
    assert dear > 10 * base


def test_a_replays_reused_steps_are_free_and_its_new_model_is_priced() -> None:
    settings = live()
    source = prepared(settings, mode="panel", judges=2)
    reused = [c.key for c in source.plan.calls if c.key.startswith("panel/answer/")]
    replay = prepared(settings, mode="panel", judges=2,
                      options={"role_models": {"synthesizer": "dear"}})
    free = estimate_for(settings, replay, reused=reused)
    assert free.calls == len(source.plan.calls) - len(reused)
    synthesis = next(c for c in replay.plan.calls if c.role == "synthesizer")
    assert free.usd == pytest.approx(price(SizeBook().usage(synthesis, "dear", "typical"), DEAR),
                                     rel=1e-4)
    assert free.usd_high == pytest.approx(price(SizeBook().usage(synthesis, "dear", "high"),
                                                DEAR), rel=1e-4)


@pytest.mark.parametrize("mode", list(Mode))
async def test_no_estimate_falls_short_of_what_the_run_billed(mode: Mode) -> None:
    """Hostile but valid input, the real gateway, the fake provider's usage figures."""
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url, prices={DEFAULT_MODEL: CHEAP})
        request = DebateRequest(topic=TOPIC + " Ω" * 100, mode=mode, rounds=2,
                                context="Ünïcödé context, much of it. " * 600,
                                options={"policy": "Policy clause §1 applies. " * 700,
                                         "ground_truth": "the answer " * 300})
        ready = prepare(settings, request)
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(ready, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink())
        finally:
            await gateway.aclose()
    assert result.cost.calls == fake.answered() > 0
    assert estimate_for(settings, ready).usd >= result.cost.usd
