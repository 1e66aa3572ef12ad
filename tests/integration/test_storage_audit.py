"""The audit hash chain: append, verify, catch tampering and deletion, concurrent appends."""

from __future__ import annotations

import asyncio
import itertools

from sqlalchemy import delete, select, update

from engine.domain import Event, EventKind, canonical_json, sha256
from storage import audit
from storage.audit import GENESIS_HASH, DbEventSink
from storage.db import Database
from storage.models import AuditEventRow
from tests.support import storage_fixtures as fx

db = fx.db  # fixture (until conftest.py imports it)


async def _append_many(db: Database, chain: str | None, n: int) -> None:
    async with db.transaction() as session:
        for i in range(n):
            await audit.append(session, debate_id=chain, kind="note", actor="tester",
                               data={"i": i, "nested": {"b": [1, 2.5, None], "a": "é"}})


async def test_append_links_and_verify_ok(db: Database) -> None:
    await _append_many(db, "d1", 3)
    await _append_many(db, None, 2)
    async with db.transaction(readonly=True) as session:
        chain = await audit.events(session, "d1")
        report = await audit.verify(session)
    assert [e.seq for e in chain] == [1, 2, 3]
    assert chain[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(chain))
    body = {"seq": 1, "chain": "d1", "kind": "note", "actor": "tester", "data": chain[0].data,
            "at": chain[0].at.isoformat()}
    assert chain[0].hash == sha256(GENESIS_HASH + canonical_json(body))
    assert report.ok and report.chains_checked == 2 and report.events_checked == 5
    assert report.first_broken is None


async def test_global_chain_is_its_own(db: Database) -> None:
    await _append_many(db, None, 2)
    async with db.transaction(readonly=True) as session:
        events = await audit.events(session, None)
        report = await audit.verify(session, "global")
    assert [(e.seq, e.debate_id) for e in events] == [(1, None), (2, None)]
    assert report.ok and report.chains_checked == 1


async def test_tampered_data_is_caught_with_chain_and_seq(db: Database) -> None:
    await _append_many(db, "d1", 4)
    await _append_many(db, "d2", 2)
    async with db.transaction() as session:
        await session.execute(
            update(AuditEventRow).where(AuditEventRow.chain == "d1", AuditEventRow.seq == 3)
            .values(data={"i": 99})
        )
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session)
        only_d2 = await audit.verify(session, "d2")
    assert not report.ok
    assert report.first_broken is not None
    assert (report.first_broken.chain, report.first_broken.seq) == ("d1", 3)
    assert "altered" in report.first_broken.reason
    assert report.broken_chains == ("d1",) and report.events_checked == 6
    assert only_d2.ok


async def test_deleted_link_is_caught(db: Database) -> None:
    await _append_many(db, "d1", 5)
    async with db.transaction() as session:
        await session.execute(
            delete(AuditEventRow).where(AuditEventRow.chain == "d1", AuditEventRow.seq == 2)
        )
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session, "d1")
    assert report.first_broken is not None
    assert (report.first_broken.chain, report.first_broken.seq) == ("d1", 2)
    assert "missing" in report.first_broken.reason


async def test_rehashed_link_still_breaks_the_next_one(db: Database) -> None:
    """An attacker who recomputes the altered link's own hash breaks the following prev_hash."""
    await _append_many(db, "d1", 3)
    async with db.transaction() as session:
        row = await session.scalar(
            select(AuditEventRow).where(AuditEventRow.chain == "d1", AuditEventRow.seq == 2)
        )
        assert row is not None
        row.data = {"forged": True}
        row.hash = audit.link_hash(row.prev_hash, seq=2, chain="d1", kind=row.kind,
                                   actor=row.actor, data=row.data, at=row.at)
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session, "d1")
    assert report.first_broken is not None
    assert report.first_broken.seq == 3 and "prev_hash" in report.first_broken.reason


async def test_concurrent_appends_to_one_chain_stay_contiguous(db: Database) -> None:
    writers = 20 if db.dialect == "postgresql" else 10

    async def one(i: int) -> None:
        async with db.transaction() as session:
            await audit.append(session, debate_id="busy", kind="note", actor=f"w{i}",
                               data={"i": i})

    await asyncio.gather(*(one(i) for i in range(writers)))
    async with db.transaction(readonly=True) as session:
        chain = await audit.events(session, "busy")
        report = await audit.verify(session, "busy")
    assert [e.seq for e in chain] == list(range(1, writers + 1))
    assert report.ok


async def test_events_pages_after_a_seq(db: Database) -> None:
    await _append_many(db, "d1", 6)
    async with db.transaction(readonly=True) as session:
        page = await audit.events(session, "d1", after_seq=2, limit=3)
    assert [e.seq for e in page] == [3, 4, 5]


async def test_event_sink_appends_engine_events(db: Database) -> None:
    sink = DbEventSink(db)
    await sink.emit(Event(kind=EventKind.PHASE_STARTED, debate_id="d9", data={"phase": "open"}))
    await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d9", rehearsal=True,
                          data={"key": "simple/open/pro", "actor": "pro", "cost": float("nan")}))
    async with db.transaction(readonly=True) as session:
        events = await audit.events(session, "d9")
        report = await audit.verify(session)
    assert [(e.kind, e.actor) for e in events] == [("phase_started", "engine"),
                                                   ("step_finished", "pro")]
    assert events[0].data == {"phase": "open", "rehearsal": False}
    assert events[1].data["rehearsal"] is True and events[1].data["cost"] is None
    assert report.ok
