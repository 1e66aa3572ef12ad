"""The urgent journal's starts (storage/journal.py `urgent_journal_for`, a `/debate`'s before its
ack): on PostgreSQL each batch is one INSERT committed by itself (autocommit, no BEGIN and
COMMIT round trips), on SQLite a transaction that jumps the writers' queue; on both, a start
is committed (seen from another connection) when its write returns, and written once."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from engine.domain import utcnow
from storage import starts
from storage.db import Database
from storage.journal import urgent_journal_for
from storage.outbox_rows import SlackStartRow


def _intent(key: str) -> starts.Intent:
    return starts.Intent(key, {"channel_id": "C1"}, {"topic": key}, "me:1", utcnow(), 30)


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
