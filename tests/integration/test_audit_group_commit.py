"""Group commit of engine events: many debates emitting at once share transactions, yet each
emit returns only when its own event is committed, and every chain stays intact and ordered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import text

from engine.domain import Event, EventKind
from storage import audit
from storage.db import Database


async def test_concurrent_emits_are_committed_in_order_per_chain(db: Database) -> None:
    sink = audit.DbEventSink(db)

    async def debate(n: int) -> None:
        for i in range(15):
            await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id=f"d{n}",
                                  data={"i": i}))
            async with db.transaction(readonly=True) as session:   # committed on return
                events = await audit.events(session, f"d{n}")
            assert [e.data["i"] for e in events] == list(range(i + 1))

    await asyncio.gather(*(debate(n) for n in range(12)))
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session)
    assert report.ok and report.chains_checked == 12 and report.events_checked == 12 * 15


async def test_a_failing_event_does_not_sink_the_others_in_its_batch(db: Database) -> None:
    sink = audit.DbEventSink(db)
    bad = Event(kind=EventKind.STEP_FINISHED, debate_id="x" * 300, data={})  # id too long
    good = [Event(kind=EventKind.STEP_FINISHED, debate_id="ok", data={"i": i}) for i in range(5)]
    outcomes = await asyncio.gather(sink.emit(bad), *(sink.emit(e) for e in good),
                                    return_exceptions=True)
    async with db.transaction(readonly=True) as session:
        stored = await audit.events(session, "ok")
    assert [e.data["i"] for e in stored] == list(range(5))
    assert all(o is None for o in outcomes[1:])
    if db.dialect == "postgresql":  # SQLite does not enforce the column's length
        assert isinstance(outcomes[0], Exception)


class _Abandoned(Exception):
    """Raised to roll a transaction back."""


async def _kinds(db: Database, debate_id: str) -> list[str]:
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session, debate_id)
        stored = await audit.events(session, debate_id)
    assert report.ok, report.first_broken
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    return [e.kind for e in stored]


async def _append(db: Database, kind: str, debate_id: str = "d") -> None:
    async with db.transaction() as session:
        await audit.append(session, debate_id=debate_id, kind=kind, actor="test")


async def test_a_rolled_back_append_leaves_no_remembered_head(db: Database) -> None:
    audit.DbEventSink(db)   # this process now remembers chain heads on db
    await _append(db, "kept")
    with pytest.raises(_Abandoned):
        async with db.transaction() as session:
            await audit.append(session, debate_id="d", kind="lost", actor="test")
            raise _Abandoned
    await _append(db, "after")
    assert await _kinds(db, "d") == ["kept", "after"]


async def test_a_savepoint_released_then_rolled_back_leaves_no_remembered_head(
    db: Database,
) -> None:
    audit.DbEventSink(db)
    await _append(db, "kept")
    with pytest.raises(_Abandoned):
        async with db.transaction() as session:
            async with session.begin_nested():
                await audit.append(session, debate_id="d", kind="lost", actor="test")
            raise _Abandoned
    async with db.transaction() as session:
        await audit.append(session, debate_id="d", kind="outer", actor="test")
        nested = await session.begin_nested()
        await audit.append(session, debate_id="d", kind="undone", actor="test")
        await nested.rollback()
    await _append(db, "after")
    assert await _kinds(db, "d") == ["kept", "outer", "after"]


async def _another_process(db: Database) -> Database:
    """A second engine on the same database (the same test schema on PostgreSQL)."""
    url = db.url.render_as_string(hide_password=False)
    if db.dialect == "sqlite":
        return Database(url)
    async with db.transaction(readonly=True) as session:
        path = await session.scalar(text("SHOW search_path"))
    return Database(url, connect_args={"server_settings": {"search_path": str(path)}})


async def test_a_head_another_process_moved_costs_a_retry_not_a_fork(db: Database) -> None:
    sink = audit.DbEventSink(db)
    other = await _another_process(db)
    try:
        await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d", data={}))
        await _append(db, "direct")             # db remembers the head at seq 2
        await _append(other, "elsewhere")       # another process moves the chain to seq 3
        await _append(db, "direct-again")       # remembered head is stale: refused, re-read
        await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d", data={}))
        await _append(other, "elsewhere-again")
        await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d", data={}))
    finally:
        await other.dispose()
    assert await _kinds(db, "d") == [
        "step_finished", "direct", "elsewhere", "direct-again", "step_finished",
        "elsewhere-again", "step_finished"]


async def test_one_process_reads_a_chain_head_once_before_any_debate_ran(db: Database) -> None:
    """A worker claims before any debate of its process has emitted (the event sink not yet
    made): the submission's, the claim's two and the first engine event's links still follow
    the head remembered at each commit, so the chain's head is read once, for its first link."""
    reads: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM audit_events" in statement and "LIMIT" in statement:
            reads.append(statement)

    sa_event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        await _append(db, "submitted")
        async with db.transaction() as session:   # the claim: a transition and its record
            await audit.append(session, debate_id="d", kind="transition", actor="worker")
            await audit.append(session, debate_id="d", kind="claimed", actor="worker")
        await audit.DbEventSink(db).emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d",
                                               data={}))
    finally:
        sa_event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    assert len(reads) == 1
    assert await _kinds(db, "d") == ["submitted", "transition", "claimed", "step_finished"]
