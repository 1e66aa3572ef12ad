"""Output caps leave room for a reasoning model's hidden reasoning (engine/money/thinking.py),
against the suite's provider that answers as real ones do (typical replies, the default reasoning
model, its hidden tokens counted against the cap).

Reply sizes are learned per model and step kind, hidden reasoning included; the reasoning itself
depends on the effort asked. A service that learned its sizes at `low` effort and then runs at
`medium` sent caps of twice the low-effort size, and about one reply in twenty was cut off and paid
again; now a call's cap is its visible reply's room plus what the model spends at this effort."""

from __future__ import annotations

import asyncio

import pytest

from bot.settings import Settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done

pytestmark = pytest.mark.integration

API = Origin(surface="api")
FINISHED = (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)


async def consensus_debates(db: Database, fake: FakeOpenAI, effort: str, count: int) -> None:
    """`count` consensus debates through the service (a worker, SQLite) at this effort; each
    batch's estimate learns from the steps before it, as a running service does."""
    engine = gateway_settings(fake.base_url, call_timeout=30.0,
                              reasoning_effort=effort).model_dump()
    settings = Settings(**engine, cache_ttl_seconds=0, judge_cache_ttl_seconds=0,
                        daily_budget_usd=100.0)
    svc = service(db, settings)
    async with running_worker(svc, concurrency=count):
        subs = [await svc.submit(DebateRequest(topic=f"Should team {i} adopt microservices?",
                                               mode="consensus"), origin=API)
                for i in range(count)]
        done = await asyncio.gather(*(wait_done(svc, s.record.id, timeout=120) for s in subs))
    await svc.aclose()
    for record in done:
        assert record.status in FINISHED, (record.status, record.result)


async def test_hidden_reasoning_no_longer_cuts_replies_off_when_the_effort_rises(
        db: Database) -> None:
    async with FakeOpenAI(replies="typical", seed=5) as fake:
        await consensus_debates(db, fake, "low", 8)   # the history sizes are learned from
        taught = len(fake.requests)
        assert all(r.finish_reason == "stop" for r in fake.requests)
        await consensus_debates(db, fake, "medium", 12)
        raised = fake.requests[taught:]
    assert {r.body.get("reasoning_effort") for r in raised} == {"medium"}
    thought = [r.usage["reasoning_tokens"] for r in raised if r.usage]
    assert max(thought) > 2_000   # medium effort really thinks past the low-effort caps
    cut = [(r.step, r.body.get("max_completion_tokens"), r.usage) for r in raised
           if r.finish_reason == "length"]
    assert cut == []
    assert len(raised) == 12 * 10   # no call sent twice


async def test_typical_replies_on_the_default_model_are_never_cut_off(db: Database) -> None:
    """At the default effort, cold (the prior's caps) and once the sizes are learned: every call
    is sent once."""
    async with FakeOpenAI(replies="typical", seed=7) as fake:
        await consensus_debates(db, fake, "low", 6)
        await consensus_debates(db, fake, "low", 6)
    assert [r.finish_reason for r in fake.requests] == ["stop"] * 12 * 10
