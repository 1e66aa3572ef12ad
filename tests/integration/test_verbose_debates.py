"""Wordy replies through the service: a day too tight for the judging stops before the arguments
it could not get judged; the per-debate ceiling (DIALECTIC_MAX_DEBATE_USD, through the real
settings path) holds; estimates learn from wordy debates. The fake's `verbosity` pads each reply
with that many characters, billed as completion tokens. (Every mode and preset at typical and
verbose lengths: tests/integration/test_realistic_debates.py.)"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

from bot.settings import Settings, load_settings
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded
from storage.db import Database
from storage.records import Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done

API = Origin(surface="api")
TOPIC = "Should we move billing to PostgreSQL?"



def _settings(base_url: str, **extra: Any) -> Settings:
    """The defaults (model, prices, $10 a day), the fake provider, no caches."""
    return Settings(**gateway_settings(base_url).model_dump(), cache_ttl_seconds=0,
                    judge_cache_ttl_seconds=0, **extra)


async def test_a_day_too_tight_for_the_judging_stops_before_the_unjudged_arguments(
        db: Database) -> None:
    """Replies far wordier than any prediction, a cap just above the debate's hold: once the
    openings show it, the rebuttals no longer fit with the verdict, so none is paid for, and the
    verdict judges the openings."""
    # minimal replies padded to ~4,000 tokens: wordier than any prediction, inside the cap
    async with FakeOpenAI(verbosity=16_000, replies="minimal") as probe:
        hold = (await service(db, _settings(probe.base_url)).estimate(
            DebateRequest(topic=TOPIC, mode="simple", rounds=2))).usd_high
    async with FakeOpenAI(verbosity=16_000, replies="minimal") as fake:
        svc = service(db, _settings(fake.base_url, daily_budget_usd=hold * 1.2))
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple", rounds=2), origin=API)
        async with running_worker(svc):
            done = await wait_done(svc, sub.record.id)
        await svc.aclose()
    asked = Counter(r.step for r in fake.requests)
    assert asked == {"simple/opening/pro": 1, "simple/opening/con": 1, "simple/verdict": 1}
    assert done.result is not None and not done.result.complete
    assert done.result.missing[0] == "budget exhausted after phase opening: 4 calls were not made"
    assert done.result.verdict
    assert done.cost_usd <= hold * 1.2


async def test_a_day_without_room_for_the_whole_plan_refuses_it(db: Database) -> None:
    async with FakeOpenAI() as fake:
        svc = service(db, _settings(fake.base_url, daily_budget_usd=0.0001))
        with pytest.raises(BudgetExceeded, match="this debate needs about"):
            await svc.submit(DebateRequest(topic=TOPIC, mode="structured"), origin=API)
        await svc.aclose()
    assert fake.requests == []


async def test_the_ceiling_from_the_environment_holds(db: Database,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeOpenAI(verbosity=16_000) as fake:
        base = _settings(fake.base_url)
        high = (await service(db, base).estimate(
            DebateRequest(topic=TOPIC, mode="simple", rounds=2))).usd_high
        ceiling = high * 1.1
        monkeypatch.setenv("DIALECTIC_CONFIG", os.devnull)
        monkeypatch.setenv("DIALECTIC_MAX_DEBATE_USD", f"{ceiling:.9f}")
        loaded = load_settings(os.environ, **base.model_dump(exclude={"service"}),
                               cache_ttl_seconds=0)
        assert loaded.service.max_debate_usd == pytest.approx(ceiling)
        svc = service(db, loaded)
        estimate = await svc.estimate(DebateRequest(topic=TOPIC, mode="simple", rounds=2))
        assert estimate.ceiling_usd == pytest.approx(ceiling, rel=1e-3)
        assert estimate.ceiling_configured
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple", rounds=2), origin=API)
        async with running_worker(svc):
            done = await wait_done(svc, sub.record.id)
        # a ceiling below the high estimate refuses the debate before anything is paid
        monkeypatch.setenv("DIALECTIC_MAX_DEBATE_USD", f"{high / 2:.9f}")
        low = service(db, load_settings(os.environ, **base.model_dump(exclude={"service"})))
        with pytest.raises(BudgetExceeded, match="DIALECTIC_MAX_DEBATE_USD"):
            await low.submit(DebateRequest(topic=TOPIC, mode="simple", rounds=2,
                                           no_cache=True), origin=API)
        await svc.aclose()
        await low.aclose()
    assert done.result is not None and not done.result.complete   # the day had room, not it
    assert done.result.missing[0].startswith("budget exhausted")
    assert done.cost_usd <= ceiling


async def test_estimates_learn_from_wordy_debates(db: Database) -> None:
    """A chat model (a reasoning model's prior already counts thousands of hidden tokens)."""
    request = DebateRequest(topic=TOPIC, mode="structured", no_cache=True)
    async with FakeOpenAI(verbosity=4800) as fake:
        settings = Settings(**gateway_settings(fake.base_url,
                                               default_model="gpt-4o-mini").model_dump(),
                            cache_ttl_seconds=0, judge_cache_ttl_seconds=0)
        svc = service(db, settings)
        cold = await svc.estimate(request)
        async with running_worker(svc):
            for i in range(3):
                sub = await svc.submit(request.model_copy(update={"topic": f"{TOPIC} {i}"}),
                                       origin=API)
                await wait_done(svc, sub.record.id)
        svc.history.forget()
        warm = await svc.estimate(request)
        sub = await svc.submit(request, origin=API)
        async with running_worker(svc):
            done = await wait_done(svc, sub.record.id)
        await svc.aclose()
    # replies: both ends move up; prompts: the prior's generous ratio gives way to the real one
    assert warm.completion_tokens > cold.completion_tokens
    assert warm.completion_tokens_high > cold.completion_tokens_high
    assert warm.usd > cold.usd and warm.prompt_tokens < cold.prompt_tokens
    assert done.result is not None and done.result.complete
    assert warm.usd * 0.8 <= done.cost_usd <= warm.usd_high
