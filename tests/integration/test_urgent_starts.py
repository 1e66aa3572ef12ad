"""What a `/debate`'s ack waits for, batched (storage/journal.py): its start (`urgent_journal_for`)
and today's budget for its estimate (`glances_for`). On PostgreSQL each batch is statements on
their own (autocommit, no BEGIN and COMMIT round trips), on SQLite a transaction (the start's
jumping the writers' queue); on both a start is committed when its write returns, and written
once, and the estimate reads what is committed."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

from sqlalchemy import select

from bot.service.readmission import today
from engine.domain import utcnow
from storage import budget, starts
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.journal import urgent_journal_for
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


async def test_on_postgresql_a_refused_start_fails_alone_and_its_batch_is_written_whole(
        pg_db: Database) -> None:
    """A start PostgreSQL refuses (a NUL in its JSON) sinks the burst's one INSERT; the batch is
    written again start by start: that one fails with the database's error, the others are
    written whole and told so."""
    journal = urgent_journal_for(pg_db)
    bad = starts.Intent("slack:bad", {"channel_id": "C1"}, {"topic": "nul \x00 inside"}, "me:1",
                        utcnow(), 30)
    results = await asyncio.gather(
        journal.write(starts.intend_many, _intent("slack:good-1")),
        journal.write(starts.intend_many, bad),
        journal.write(starts.intend_many, _intent("slack:good-2")), return_exceptions=True)
    assert results[0] is True and results[2] is True
    assert isinstance(results[1], DATABASE_ERRORS)
    assert await _keys(pg_db) == ["slack:good-1", "slack:good-2"]
    async with pg_db.transaction(readonly=True) as session:
        row = await session.get(SlackStartRow, "slack:good-2")
    assert row is not None and row.request == _intent("slack:good-2").request
