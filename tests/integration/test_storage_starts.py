"""A burst of Slack starts written in one statement (storage/starts.py `intend_many`): each start
learns whether it went in, on SQLite and PostgreSQL, and what went in is what was asked."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from engine.domain import utcnow
from storage import starts
from storage.db import Database
from storage.outbox_rows import SlackStartRow
from tests.support import storage_fixtures as fx

db = fx.db  # fixture (until conftest.py imports it)


def _intent(key: str, owner: str = "proc:1") -> starts.Intent:
    return starts.Intent(key, {"channel_id": "C1", "user_id": f"U-{key}", "thread_ts": None},
                         {"topic": f"topic of {key}", "mode": "simple"}, owner, utcnow(), 30.0)


async def test_a_burst_of_starts_is_written_and_each_learns_whether_it_went_in(
        db: Database) -> None:
    async with db.transaction() as session:
        [kept], _ = await starts.intend_many(session, [_intent("slack:old")], False)
    assert kept
    burst = [_intent(f"slack:{i}") for i in range(120)]
    again = _intent("slack:7", owner="proc:2")     # the same key twice in one batch
    written = _intent("slack:old", owner="proc:2")   # written by an earlier batch
    async with db.transaction() as session:
        kept_all, hook = await starts.intend_many(session, [*burst, again, written], False)
    assert hook is None
    assert kept_all == [True] * 120 + [False, False]
    async with db.transaction(readonly=True) as session:
        rows = {r.key: r for r in (await session.scalars(select(SlackStartRow))).all()}
    assert len(rows) == 121
    seven = rows["slack:7"]
    assert seven.claimed_by == "proc:1"   # the first of the batch, not the repeat
    assert seven.place == {"channel_id": "C1", "user_id": "U-slack:7", "thread_ts": None}
    assert seven.request == {"topic": "topic of slack:7", "mode": "simple"}
    assert seven.status == starts.PENDING and seven.attempts == 0
    assert seven.claimed_until is not None and seven.created_at is not None
    assert seven.claimed_until - seven.created_at == timedelta(seconds=30)
    assert rows["slack:old"].claimed_by == "proc:1"
