"""`transition()` writes a debate's fields with one prebuilt UPDATE and puts them into the row it
holds, where it let the ORM flush the row: what is stored, what is returned and what the
transaction reads next must be what the ORM's flush gave (still used inside a savepoint), on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from engine.domain import DebateResult, utcnow
from storage import audit, debates
from storage.db import Database
from storage.models import DebateRow
from storage.records import DebateStatus
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)

#: the columns a debate's id and request make different from another's
_OWN = {"id", "topic", "request", "idempotency_key", "topic_key", "created_at", "updated_at",
        "finished_at", "started_at", "lease_expires_at"}


def _result(debate_id: str) -> DebateResult:
    verdict = "Pro wins — “microservices” 🏳️‍🌈 are premature; \u2028 see C2.\n" * 40
    return DebateResult(id=debate_id, status="completed", mode="simple", topic="t é",
                        verdict=verdict, missing=["a step — degraded", "tab\t and \\ backslash"])


async def _columns(database: Database, debate_id: str) -> dict[str, Any]:
    async with database.transaction(readonly=True) as session:
        row = (await session.execute(select(DebateRow.__table__).where(
            DebateRow.__table__.c.id == debate_id))).one()
    return dict(row._mapping)


async def _finish(database: Database, debate_id: str, *, in_savepoint: bool) -> None:
    """What the worker does to a debate: claim it, then finish and route it in one
    transaction; optionally every transition inside a savepoint (the ORM's flush)."""
    now = utcnow()
    async with database.transaction() as session:
        async def moved(to: DebateStatus, **fields: Any) -> None:
            if in_savepoint:
                async with session.begin_nested():
                    await debates.transition(session, debate_id, to, actor="w1", **fields)
            else:
                await debates.transition(session, debate_id, to, actor="w1", **fields)
        await moved(DebateStatus.DEBATING, started_at=now, lease_owner="w1",
                    lease_expires_at=now + timedelta(seconds=60), attempts=1)
        await moved(DebateStatus.COMPLETED, result=_result(debate_id), cost_usd=0.0421,
                    error="", finished_at=now, lease_owner=None, lease_expires_at=None)
        await moved(DebateStatus.AWAITING_REVIEW, reason="split panel")


async def test_what_is_stored_is_what_the_orm_s_flush_stored(db: Database) -> None:
    core, orm = await add_debate(db), await add_debate(db)
    await _finish(db, core.id, in_savepoint=False)
    await _finish(db, orm.id, in_savepoint=True)
    stored, expected = await _columns(db, core.id), await _columns(db, orm.id)
    assert stored["status"] == "awaiting_review" and stored["cost_usd"] == 0.0421
    assert stored["result"]["id"] == core.id and stored["result"]["verdict"].startswith("Pro")
    assert stored["result"] == {**expected["result"], "id": core.id}
    assert {k: v for k, v in stored.items() if k not in _OWN | {"result"}} == {
        k: v for k, v in expected.items() if k not in _OWN | {"result"}}
    assert stored["finished_at"] is not None and stored["started_at"] is not None
    assert stored["lease_owner"] is None and stored["lease_expires_at"] is None
    async with db.transaction(readonly=True) as session:
        assert (await audit.verify(session, core.id)).ok


async def test_the_row_held_reads_as_stored_and_is_not_written_again(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        claimed = await debates.transition(session, record.id, DebateStatus.DEBATING,
                                           actor="w1", lease_owner="w1", attempts=3)
        assert not session.dirty   # nothing left for a flush to write
        again = await debates.get(session, record.id, for_update=True)
        result = _result(record.id)
        finished = await debates.transition(session, record.id, DebateStatus.COMPLETED,
                                            actor="w1", result=result)
    assert claimed.status is again.status is DebateStatus.DEBATING
    assert (claimed.lease_owner, claimed.attempts) == (again.lease_owner, again.attempts) == (
        "w1", 3)
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
    assert stored == finished
    assert stored.result == result and stored.lease_owner is None


async def test_a_rolled_back_savepoint_leaves_the_row_as_it_was(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w1")
        savepoint = await session.begin_nested()
        await debates.transition(session, record.id, DebateStatus.FAILED, actor="w1",
                                 error="undone")
        await savepoint.rollback()
        current = await debates.get(session, record.id, for_update=True)
    assert current.status is DebateStatus.DEBATING and current.error == ""
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
    assert stored.status is DebateStatus.DEBATING and stored.error == ""
