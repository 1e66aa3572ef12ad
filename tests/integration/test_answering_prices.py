"""Prices follow the model that answers: an Azure-style endpoint whose deployment name
(`prod-reasoner`) hides a dearer reasoning model (`o1-2024-12-17`) cannot take a day past its cap.
Before any reply the name is priced pessimistically (as o1, with a reasoning allowance); once the
endpoint has answered, holds, predictions and estimates price what answered, in this process and,
through the database, in every other one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.service.debates import DebateService
from bot.settings import Settings
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded
from engine.money.answering import STAND_IN
from storage import answers, budget
from storage.records import Origin
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import DONE, running_worker, service
from tests.support.storage_fixtures import BACKENDS, migrated_database

DEPLOYMENT = "prod-reasoner"
HIDDEN = "o1-2024-12-17"
TOPIC = "Should we move billing to PostgreSQL?"


def azure_settings(base_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "openai_api_key": TEST_API_KEY, "openai_base_url": base_url,
        "default_model": DEPLOYMENT, "backoff_base": 0.01, "backoff_cap": 0.05,
        "poll_interval": 0.05, "lease_seconds": 5.0, "cache_ttl_seconds": 0}
    values.update(overrides)
    return Settings(**values)


async def _settled(svc: DebateService, ids: list[str]) -> None:
    async with asyncio.timeout(120):
        for debate_id in ids:
            while (await svc.get(debate_id)).status not in DONE:
                await asyncio.sleep(0.05)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_deployment_hiding_a_reasoning_model_never_takes_the_day_past_its_cap(
        backend: str, tmp_path: Path) -> None:
    cap = 3.0
    async with FakeOpenAI(deployments={DEPLOYMENT: HIDDEN}) as fake, \
            migrated_database(backend, tmp_path) as db:
        svc = service(db, azure_settings(fake.base_url, daily_budget_usd=cap))
        ids: list[str] = []
        refused = 0
        async with running_worker(svc, concurrency=3):
            for n in range(10):
                try:
                    sub = await svc.submit(DebateRequest(topic=f"{TOPIC} #{n}", mode="simple"),
                                           origin=Origin(surface="api"))
                except BudgetExceeded:
                    refused += 1
                    await _settled(svc, ids)  # what they did not spend is free again
                    continue
                ids.append(sub.record.id)
            await _settled(svc, ids)
        async with db.transaction(readonly=True) as session:
            state = await budget.state(session, svc.clock().date(), cap_usd=cap)
            learned = await answers.known(session, svc.engine.endpoint_key)
        spent = sum([(await svc.get(i)).cost_usd for i in ids])
        await svc.aclose()
    assert {r.body["model"] for r in fake.requests} == {DEPLOYMENT}
    assert fake.answered() > 0 and ids
    assert learned == {DEPLOYMENT: HIDDEN}
    assert spent == pytest.approx(state.spent_usd, abs=1e-6)
    assert state.spent_usd <= cap + 1e-6, (state, refused, len(ids))
    assert refused > 0   # the cap was reached: this was a test of it, not of a quiet day


async def test_an_unknown_name_is_priced_as_the_stand_in_until_it_answers_then_as_what_answered(
        tmp_path: Path) -> None:
    async with FakeOpenAI(deployments={DEPLOYMENT: HIDDEN}) as fake, \
            migrated_database("sqlite", tmp_path) as db:
        first = service(db, azure_settings(fake.base_url))
        request = DebateRequest(topic=TOPIC, mode="simple")
        before = await first.estimate(request)
        as_stand_in = await service(db, azure_settings(
            fake.base_url, default_model=STAND_IN)).estimate(request)
        as_chat = await service(db, azure_settings(
            fake.base_url, default_model="gpt-4o-mini")).estimate(request)
        assert before.usd_high == pytest.approx(as_stand_in.usd_high)
        assert before.usd_high > 10 * as_chat.usd_high   # o1's rates and its reasoning
        sub = await first.submit(request, origin=Origin(surface="api"))
        async with running_worker(first, concurrency=1):
            async with asyncio.timeout(60):
                while (await first.get(sub.record.id)).status not in DONE:
                    await asyncio.sleep(0.05)
        await first.aclose()
        # another process on the same database: it has never seen a reply, and still knows
        other = service(db, azure_settings(fake.base_url))
        after = await other.estimate(request)
        as_hidden = await service(db, azure_settings(
            fake.base_url, default_model=HIDDEN)).estimate(request)
        await other.aclose()
    assert other.engine.priced_model(DEPLOYMENT) == HIDDEN
    assert after.usd_high == pytest.approx(as_hidden.usd_high)


async def test_an_answer_under_its_own_name_is_priced_at_the_default_not_the_stand_in(
        tmp_path: Path) -> None:
    """A local model the catalogue does not know, answering as itself: pessimistic only until
    its first reply; then what settlement charges (the configured default price)."""
    async with FakeOpenAI(replies="minimal") as fake, \
            migrated_database("sqlite", tmp_path) as db:
        svc = service(db, azure_settings(fake.base_url, default_model="llama-local"))
        assert svc.engine.priced_model("llama-local") == STAND_IN
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"),
                               origin=Origin(surface="api"))
        async with running_worker(svc, concurrency=1):
            async with asyncio.timeout(60):
                while (await svc.get(sub.record.id)).status not in DONE:
                    await asyncio.sleep(0.05)
        await svc.aclose()
        assert svc.engine.priced_model("llama-local") == "llama-local"
        assert not svc.engine.price_quote("llama-local").known

