"""The daily cap holds at run time, for any input and any number of debates, workers and
processes: a debate whose next call its money cannot cover stops calling the provider and ends
incomplete, saying where; every reply is charged as it arrives, so the day's spend is the
provider's bill, and never passes the cap by more than what calls in flight overran."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from bot.service.debates import DebateService
from bot.settings import Settings
from engine.core.debate import estimate_for, prepare, run_debate
from engine.domain import DebateRequest, EventKind, Usage
from engine.errors import BudgetExceeded
from engine.money.cost import price
from engine.ports import MemoryCheckpointStore, MemoryEventSink, MemoryPurse
from engine.provider.gateway import OpenAIGateway
from engine.settings import ModelPrice
from engine.vocabulary import ResultStatus
from storage import budget
from storage.db import Database
from storage.records import DebateRecord, Origin
from tests.fakes.fixtures import DEFAULT_MODEL, TEST_API_KEY, gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done
from tests.support.storage_fixtures import BACKENDS, migrated_database

TOPIC = "Should we move billing to PostgreSQL?"
RATE = ModelPrice(input=1.0, output=4.0)          # USD per million tokens
DEAR = ModelPrice(input=60.0, output=240.0)
API = Origin(surface="api")
CHAT_MODEL = "gpt-4o-mini"


def _step_costs(fake: FakeOpenAI, rates: dict[str, ModelPrice]) -> list[float]:
    """What each answered request cost (a step here is one request: nothing is re-asked)."""
    return [price(Usage(**r.usage), rates[str(r.body.get("model"))])
            for r in fake.requests if r.usage is not None]


async def test_a_run_stops_arguing_before_what_it_could_not_get_judged() -> None:
    """The purse covers the whole plan at the prior's verbose sizes, but the model runs wordier
    still: once the openings show it, the rebuttals (and the verdict after them) no longer fit,
    so no rebuttal is paid for; the verdict judges the openings."""
    async with FakeOpenAI(verbosity=6000) as fake:       # ~1,500 tokens a reply, not ~350
        settings = gateway_settings(fake.base_url, prices={DEFAULT_MODEL: RATE})
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple", rounds=3))
        limit = estimate_for(settings, prepared).usd_high * 1.05
        sink = MemoryEventSink()
        purse = MemoryPurse(limit=limit)
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=sink, purse=purse)
        finally:
            await gateway.aclose()
    costs = _step_costs(fake, {DEFAULT_MODEL: RATE})
    assert result.status is ResultStatus.COMPLETED and not result.complete
    assert result.missing[0] == "budget exhausted after phase opening: 6 calls were not made"
    assert result.error == result.missing[0]
    asked = sorted(r.step for r in fake.requests)
    assert asked == ["simple/opening/con", "simple/opening/pro", "simple/verdict"]
    assert fake.answered() == result.cost.calls == 3
    assert result.verdict
    assert purse.charged == pytest.approx(result.cost.usd) == pytest.approx(sum(costs))
    assert purse.charged <= limit
    exhausted = [e for e in sink.events if e.kind is EventKind.BUDGET_EXHAUSTED]
    assert len(exhausted) == 1


async def test_a_run_whose_plan_does_not_fit_makes_no_call() -> None:
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url, prices={DEFAULT_MODEL: RATE})
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple", rounds=1))
        purse = MemoryPurse(limit=estimate_for(settings, prepared).usd_high * 0.9)
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink(),
                                      purse=purse)
        finally:
            await gateway.aclose()
    assert fake.requests == [] and purse.charged == 0
    assert result.missing[0].startswith("budget exhausted in phase opening")


async def test_a_top_up_lets_a_run_go_on_within_its_margin() -> None:
    async with FakeOpenAI(verbosity=6000) as fake:
        settings = gateway_settings(fake.base_url, prices={DEFAULT_MODEL: RATE})
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple", rounds=1))
        purse = MemoryPurse(limit=0.0, extra=1.0)
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink(),
                                      purse=purse)
        finally:
            await gateway.aclose()
    assert result.complete and result.cost.usd > 0
    assert purse.charged == pytest.approx(result.cost.usd)


# --- the service: the database's budget, several workers, hostile input -------------------------


@asynccontextmanager
async def twin(database: Database) -> AsyncIterator[Database]:
    """A second connection pool on the same database: another process, as far as locks go."""
    url = database.url.render_as_string(hide_password=False)
    options: dict[str, Any] = {}
    if database.dialect == "postgresql":
        async with database.engine.connect() as connection:
            path = (await connection.execute(text("SHOW search_path"))).scalar_one()
        options["connect_args"] = {"server_settings": {"search_path": path}}
    other = Database(url, **options)
    try:
        yield other
    finally:
        await other.dispose()


def live_settings(base_url: str, cap: float, **extra: Any) -> Settings:
    """A chat model at a fixed price: its replies, padded, run far past every prediction."""
    return Settings(openai_api_key=TEST_API_KEY, openai_base_url=base_url,
                    default_model=CHAT_MODEL,
                    prices={CHAT_MODEL: RATE, "dear": DEAR}, daily_budget_usd=cap,
                    poll_interval=0.05, lease_seconds=5.0, backoff_base=0.01, backoff_cap=0.05,
                    cache_ttl_seconds=0, judge_cache_ttl_seconds=0, **extra)


HOSTILE: list[dict[str, Any]] = [
    {"mode": "consensus", "context": "A long thread, pasted whole. " * 690},    # 20,000 chars
    {"mode": "structured", "options": {"role_models": {"judge": "dear"}}},    # a dear model
    {"mode": "panel", "options": {"policy": "Clause: no. " * 1660,            # 20,000 chars
                                  "models": ["dear", "dear", ""]}},
    {"mode": "critique", "rounds": 5},
    {"mode": "simple", "rounds": 5},
    {"mode": "redteam", "context": "Background. " * 1600},
    # small requests whose estimates fit, run by a model far wordier than any plan expects
    {"mode": "simple"}, {"mode": "consensus", "judges": 2}, {"mode": "critique", "rounds": 1},
]


async def _submit_all(services: list[DebateService]) -> list[DebateRecord]:
    async def one(i: int, request: dict[str, Any]) -> DebateRecord | None:
        svc = services[i % len(services)]
        try:
            sub = await svc.submit(DebateRequest(topic=f"{TOPIC} ({i})", **request), origin=API)
        except BudgetExceeded:
            return None
        return sub.record

    submitted = await asyncio.gather(*(one(i, r) for i, r in enumerate(HOSTILE * 2)))
    return [r for r in submitted if r is not None]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_cap_holds_for_hostile_input_across_workers_and_processes(
        backend: str, tmp_path: Path) -> None:
    cap = 0.10
    async with FakeOpenAI(verbosity=12_000) as fake, AsyncExitStack() as stack:
        database = await stack.enter_async_context(migrated_database(backend, tmp_path))
        other = await stack.enter_async_context(twin(database))
        settings = live_settings(fake.base_url, cap)
        services = [service(database, settings), service(other, settings)]
        for svc in services:
            stack.push_async_callback(svc.aclose)
        records = await _submit_all(services)
        assert records, "some debates fit the cap"
        async with AsyncExitStack() as workers:
            for i, svc in enumerate(services):
                await workers.enter_async_context(running_worker(svc, concurrency=3,
                                                                 worker_id=f"w{i}"))
            done = [await wait_done(services[0], r.id, timeout=90) for r in records]
        async with database.transaction(readonly=True) as session:
            state = await budget.state(session, date.today())
    costs = _step_costs(fake, {CHAT_MODEL: RATE, "dear": DEAR})
    spent = sum(costs)
    assert state.spent_usd == pytest.approx(spent, rel=1e-6)          # the provider's bill
    assert sum(r.cost_usd for r in done) == pytest.approx(spent, rel=1e-6)
    assert sum((r.result.cost.calls if r.result else 0) for r in done) == fake.answered()
    # never past the cap by more than the calls in flight overran (2 workers x 3 slots)
    assert state.spent_usd <= cap + 6 * max(costs)
    assert any(r.result is not None and r.result.missing
               and r.result.missing[0].startswith("budget exhausted") for r in done)
    assert state.reserved_usd == pytest.approx(0.0, abs=1e-9)


def test_a_quarter_megabyte_policy_is_refused_before_it_costs_anything() -> None:
    with pytest.raises(ValidationError, match=r"options\.policy"):
        DebateRequest(topic=TOPIC, options={"policy": "x" * 250_000})
