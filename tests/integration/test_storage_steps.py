"""Checkpointed steps: one row per key, first writer wins, replay copies, and the engine resumes
a debate over the database without paying for a step twice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, Evidence, StepRecord, Usage
from engine.provider.llm import CallSpec, Reply, T
from engine.provider.rehearsal import RehearsalModel
from engine.settings import EngineSettings
from storage import audit, evidence, steps
from storage.audit import DbEventSink
from storage.db import Database
from storage.errors import NotFound
from storage.evidence import DbEvidenceSource
from storage.journal import lookups_for
from storage.models import StepRow
from storage.steps import DbCheckpointStore
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


def _step(key: str = "simple/open/pro", **fields: Any) -> StepRecord:
    values: dict[str, Any] = {
        "role": "pro", "phase": "open", "model": "gpt-4o-mini", "output": {"claim": "yes"},
        "prompt_hash": "h", "usage": Usage(prompt_tokens=10, completion_tokens=5),
        "cost_usd": 0.001, "latency_s": 0.5, **fields,
    }
    return StepRecord(key=key, **values)


async def _count(db: Database, debate_id: str) -> int:
    async with db.transaction(readonly=True) as session:
        n = await session.scalar(
            select(func.count()).select_from(StepRow).where(StepRow.debate_id == debate_id)
        )
    return int(n or 0)


async def test_put_then_get_round_trips(db: Database) -> None:
    debate = await add_debate(db)
    store = DbCheckpointStore(db)
    record = _step(output={"claim": "yes", "n": [1, 2.5]}, rehearsal=True)
    assert await store.get(debate.id, record.key) is None
    assert await store.put(debate.id, record) == record
    assert await store.get(debate.id, record.key) == record


async def test_cached_and_reasoning_tokens_round_trip(db: Database) -> None:
    debate = await add_debate(db)
    usage = Usage(prompt_tokens=12_400, completion_tokens=2_000, cached_tokens=3_072,
                  reasoning_tokens=1_850)
    record = _step(usage=usage)
    await DbCheckpointStore(db).put(debate.id, record)
    async with db.transaction(readonly=True) as session:
        assert (await steps.get_step(session, debate.id, record.key)) == record
        assert (await steps.list_steps(session, debate.id))[0].usage == usage
        many, _ = await steps.list_steps_many(session, [debate.id], fresh=True)
    assert many[0][0].usage == usage


async def test_second_put_returns_the_first_record(db: Database) -> None:
    debate = await add_debate(db)
    store = DbCheckpointStore(db)
    first = await store.put(debate.id, _step(output={"claim": "first"}))
    second = await store.put(debate.id, _step(output={"claim": "second"}))
    assert second == first and second.output == {"claim": "first"}
    assert await _count(db, debate.id) == 1


async def test_concurrent_puts_of_one_key_store_one_row(db: Database) -> None:
    debate = await add_debate(db)
    store = DbCheckpointStore(db)
    records = [_step(output={"claim": f"writer {i}"}) for i in range(6)]
    results = await asyncio.gather(*(store.put(debate.id, r) for r in records))
    assert len({r.model_dump_json() for r in results}) == 1  # everyone got the same record
    assert results[0] in records
    assert await _count(db, debate.id) == 1


async def test_a_degraded_record_is_replaced_by_a_real_one(db: Database) -> None:
    debate = await add_debate(db)
    store = DbCheckpointStore(db)
    await store.put(debate.id, _step(status="degraded", output=None, error="timeout"))
    real = await store.put(debate.id, _step(output={"claim": "late but real"}))
    assert real.status == "ok" and real.output == {"claim": "late but real"}
    again = await store.put(debate.id, _step(status="degraded", output=None))
    assert again == real


async def test_put_for_an_unknown_debate_is_not_found(db: Database) -> None:
    with pytest.raises(NotFound):
        await DbCheckpointStore(db).put("missing", _step())


async def test_list_steps_in_the_order_they_were_stored(db: Database) -> None:
    source = await add_debate(db)
    other = await add_debate(db)
    store = DbCheckpointStore(db)
    for key in ("b", "a", "c"):
        await store.put(source.id, _step(key))
    await store.put(other.id, _step("b", output={"claim": "another debate's"}))
    async with db.transaction() as session:
        listed = await steps.list_steps(session, source.id)
    assert [r.key for r in listed] == ["b", "a", "c"]
    assert all(r.output != {"claim": "another debate's"} for r in listed)


async def test_debates_starting_together_read_their_checkpoints_in_one_query(db: Database
                                                                             ) -> None:
    """A resumed debate gets its own steps back, a new one none, and both first reads share one
    read-only transaction."""
    resumed, fresh = await add_debate(db), await add_debate(db)
    writer = DbCheckpointStore(db)
    for key in ("b", "a"):
        await writer.put(resumed.id, _step(key, output={"claim": key}))
    lookups = lookups_for(db)
    before = lookups.transactions
    store = DbCheckpointStore(db)
    got = await asyncio.gather(store.get(resumed.id, "a"), store.get(fresh.id, "a"),
                               store.get(resumed.id, "b"))
    assert [g.output if g else None for g in got] == [{"claim": "a"}, None, {"claim": "b"}]
    assert lookups.transactions - before == 1
    async with db.transaction(readonly=True) as session:
        many, _ = await steps.list_steps_many(session, [fresh.id, resumed.id], False)
        assert many == [[], await steps.list_steps(session, resumed.id)]


class _CountingModel(RehearsalModel):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        self.calls += 1
        return await super().complete(spec)


async def test_engine_resumes_a_debate_from_database_checkpoints(db: Database) -> None:
    settings = EngineSettings(rehearsal=True)
    prepared = prepare(settings, DebateRequest(topic="Tabs or spaces?", mode="simple"))
    debate = await add_debate(db)
    async with db.transaction() as session:
        await evidence.add(session, debate_id=debate.id,
                           evidence=Evidence(author="U1", text="PEP 8 says spaces",
                                             source_id="C1:1.5"))
    ports: dict[str, Any] = {"store": DbCheckpointStore(db), "sink": DbEventSink(db),
                             "evidence": DbEvidenceSource(db)}
    first_llm, second_llm = _CountingModel(), _CountingModel()
    first = await run_debate(prepared, debate_id=debate.id, settings=settings, llm=first_llm,
                             **ports)
    second = await run_debate(prepared, debate_id=debate.id, settings=settings, llm=second_llm,
                              **ports)
    assert first.status == "completed" and first_llm.calls == len(prepared.plan.calls)
    assert second_llm.calls == 0 and second.cost.reused_calls == first_llm.calls
    assert second.verdict == first.verdict
    assert [e.text for e in first.evidence] == ["PEP 8 says spaces"]
    assert await _count(db, debate.id) == first_llm.calls
    async with db.transaction(readonly=True) as session:
        kinds = [e.kind for e in await audit.events(session, debate.id, limit=1000)]
        assert (await audit.verify(session)).ok
    assert kinds.count("debate_finished") == 2 and "step_reused" in kinds
