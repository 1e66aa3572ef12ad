"""What a `/debate`'s ack waits for, batched (storage/journal.py): its start (`urgent_journal_for`)
and today's budget for its estimate (`glances_for`). On PostgreSQL each batch is statements on
their own (autocommit, no BEGIN and COMMIT round trips), on SQLite a transaction (the start's
jumping the writers' queue); on both a start is committed when its write returns, and written
once, and the estimate reads what is committed."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.service.readmission import today
from engine.domain import utcnow
from storage import budget, starts
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.journal import Journal, urgent_journal_for
from storage.outbox_rows import SlackStartRow


def _intent(key: str) -> starts.Intent:
    return starts.Intent(key, {"channel_id": "C1", "team_id": None},
                         {"topic": f"{key} <é> \"quoted\"", "rounds": 2}, "me:1", utcnow(), 30)


async def _keys(db: Database) -> list[str]:
    async with db.transaction(readonly=True) as session:
        return sorted(await session.scalars(select(SlackStartRow.key)))


async def test_a_burst_of_starts_is_committed_once_each_when_written(db: Database) -> None:
    journal = urgent_journal_for(db)
    kept = await asyncio.gather(*(journal.write(starts.intend_many, _intent(f"slack:{i % 5}"))
                                  for i in range(10)))
    assert sorted(kept) == [False] * 5 + [True] * 5   # a key twice: the first is written
    assert await _keys(db) == [f"slack:{i}" for i in range(5)]
    assert await journal.write(starts.intend_many, _intent("slack:3")) is False
    written = _intent("slack:read back")
    assert await journal.write(starts.intend_many, written) is True
    async with db.transaction(readonly=True) as session:
        row = await session.get(SlackStartRow, "slack:read back")
    assert row is not None
    assert (row.place, row.request, row.status, row.attempts, row.claimed_by) == (
        written.place, written.request, starts.PENDING, 0, written.owner)
    assert (row.created_at, row.updated_at, row.claimed_until) == (
        written.now, written.now, written.now + timedelta(seconds=written.lease_seconds))
    assert (row.message_ts, row.debate_id, row.last_error) == (None, None, "")


async def test_a_statement_alone_commits_by_itself_on_postgresql(db: Database) -> None:
    """`alone`: each statement stands alone; a failure after it undoes nothing on PostgreSQL
    (autocommit), and undoes it on SQLite (a transaction as usual)."""
    try:
        async with db.transaction(alone=True) as session:
            await starts.intend_many(session, [_intent("slack:alone")])
            raise LookupError("after the statement")
    except LookupError:
        pass
    expected = ["slack:alone"] if db.dialect == "postgresql" else []
    assert await _keys(db) == expected


async def test_the_estimate_reads_today_s_committed_budget_in_one_batch(db: Database) -> None:
    day = date(2026, 11, 28)
    async with db.transaction() as session:
        await budget.reserve(session, day=day, cap_usd=10.0, amount_usd=1.25, debate_id="d-1")
        await budget.reserve(session, day=day, cap_usd=10.0, amount_usd=0.5, debate_id="d-2")
    read = await asyncio.gather(*(today(db, day, 10.0) for _ in range(20)))
    assert {(d.committed_usd, d.cap_usd) for d in read} == {(1.75, 10.0)}
    assert (await today(db, date(2026, 11, 29), 10.0)).committed_usd == 0.0


async def _held(journal: Journal, key: str, gate: asyncio.Event) -> asyncio.Future[bool]:
    """A start whose batch is taken and its connection open, its INSERT held until `gate`."""
    entered = asyncio.Event()

    async def held(session: AsyncSession, intents: list[starts.Intent], fresh: bool
                   ) -> tuple[list[bool], None]:
        entered.set()
        await gate.wait()
        return await starts.intend_many(session, intents, fresh)

    writing = asyncio.ensure_future(journal.write(held, _intent(key)))
    await entered.wait()
    return writing


async def test_on_postgresql_starts_commit_while_an_earlier_batch_is_still_in_flight(
        pg_db: Database) -> None:
    """A burst's later starts need not wait for the first batch's commit: they go in a second
    batch at once, each committed (read back by another session) when its write returns."""
    journal = urgent_journal_for(pg_db)
    gate = asyncio.Event()
    first = await _held(journal, "slack:first", gate)
    later = await asyncio.wait_for(asyncio.gather(
        *(journal.write(starts.intend_many, _intent(f"slack:later-{i}")) for i in range(5))),
        timeout=30)   # a safety net only: without a second lane this would wait forever
    assert later == [True] * 5 and not first.done()
    assert await _keys(pg_db) == [f"slack:later-{i}" for i in range(5)]
    gate.set()
    assert await first is True
    assert await _keys(pg_db) == ["slack:first", *(f"slack:later-{i}" for i in range(5))]


async def test_on_postgresql_a_key_in_two_batches_in_flight_is_written_once(
        pg_db: Database) -> None:
    journal = urgent_journal_for(pg_db)
    gate = asyncio.Event()
    first = await _held(journal, "slack:twice", gate)
    assert await asyncio.wait_for(journal.write(starts.intend_many, _intent("slack:twice")),
                                  timeout=30) is True   # the one committed first is written
    gate.set()
    assert await first is False   # told it was already: its command is a repeated delivery
    assert await _keys(pg_db) == ["slack:twice"]


async def test_on_postgresql_a_failed_batch_answers_each_start_and_writes_nothing_half_done(
        pg_db: Database) -> None:
    """A start PostgreSQL refuses (a NUL in its JSON) fails alone, with the database's error,
    in a second batch as in the first; the others of its batch are written whole."""
    journal = urgent_journal_for(pg_db)
    gate = asyncio.Event()
    first = await _held(journal, "slack:first", gate)
    bad = starts.Intent("slack:bad", {"channel_id": "C1"}, {"topic": "nul \x00 inside"}, "me:1",
                        utcnow(), 30)
    results = await asyncio.wait_for(asyncio.gather(
        journal.write(starts.intend_many, _intent("slack:good-1")),
        journal.write(starts.intend_many, bad),
        journal.write(starts.intend_many, _intent("slack:good-2")), return_exceptions=True),
        timeout=30)
    assert results[0] is True and results[2] is True
    assert isinstance(results[1], DATABASE_ERRORS)
    gate.set()
    assert await first is True
    assert await _keys(pg_db) == ["slack:first", "slack:good-1", "slack:good-2"]
    async with pg_db.transaction(readonly=True) as session:
        row = await session.get(SlackStartRow, "slack:good-2")
    assert row is not None and row.request == _intent("slack:good-2").request


async def test_on_sqlite_starts_keep_one_batch_at_a_time(sqlite_db: Database) -> None:
    """SQLite has one writer: a second batch would only wait for the write lock."""
    assert urgent_journal_for(sqlite_db).lanes == 1
