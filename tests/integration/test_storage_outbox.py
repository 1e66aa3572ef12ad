"""The outbox's repository on SQLite and PostgreSQL: an obligation is owed once, claimed by one
dispatcher at a time (its lease), written to only by its holder, delivered or given up, and
counted for /healthz."""

from __future__ import annotations

from datetime import timedelta

from engine.domain import utcnow
from storage import outbox
from storage.db import Database
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


async def test_an_obligation_is_owed_once_and_held_by_one_dispatcher(db: Database) -> None:
    debate = await add_debate(db)
    now = utcnow()
    async with db.transaction() as session:
        for _ in range(2):   # a finish written again owes nothing twice
            await outbox.owe(session, debate_id=debate.id, kind="review_request", ref="r1",
                             now=now)
    async with db.transaction() as session:
        [mine] = await outbox.claim_due(session, owner="a", now=now, lease_seconds=30, limit=5)
        assert await outbox.claim_due(session, owner="b", now=now, lease_seconds=30,
                                      limit=5) == []   # held: nobody else takes it
    async with db.transaction() as session:
        assert not await outbox.any_due(session, now=now)
        assert not await outbox.save_state(session, mine.id, owner="b", state={"x": 1}, now=now,
                                           lease_seconds=30)   # not b's to write
        assert await outbox.save_state(session, mine.id, owner="a", state={"done": {"s": "1"}},
                                       now=now, lease_seconds=30)
    later = now + timedelta(seconds=31)   # a's lease ran out: b takes it, with what a recorded
    async with db.transaction() as session:
        [taken] = await outbox.claim_due(session, owner="b", now=later, lease_seconds=30,
                                         limit=5)
        assert taken.state == {"done": {"s": "1"}}
        assert not await outbox.delivered(session, mine.id, owner="a", state={}, now=later)
        assert await outbox.delivered(session, mine.id, owner="b", state=taken.state, now=later)
        assert (await outbox.backlog(session)).pending == 0
        assert await outbox.undelivered(session) == []


async def test_a_failed_attempt_waits_then_is_given_up_and_retried_now(db: Database) -> None:
    debate = await add_debate(db)
    now = utcnow()
    async with db.transaction() as session:
        await outbox.owe(session, debate_id=debate.id, kind="thread_result", ref="t", now=now)
        [owed] = await outbox.claim_due(session, owner="a", now=now, lease_seconds=30, limit=1,
                                        exclude=[])
        await outbox.failed_attempt(session, owed.id, owner="a", error="not_in_channel",
                                    state={}, now=now, retry_at=now + timedelta(minutes=5))
    async with db.transaction() as session:
        assert await outbox.claim_due(session, owner="a", now=now, lease_seconds=30,
                                      limit=1) == []   # waiting out its backoff
        backlog = await outbox.backlog(session)
        assert (backlog.pending, backlog.failed, backlog.last_error) == (1, 0, "not_in_channel")
        assert await outbox.retry_now(session, owed.id, now=now)
        [again] = await outbox.claim_due(session, owner="a", now=now, lease_seconds=30, limit=1)
        assert again.attempts == 1
        await outbox.failed_attempt(session, owed.id, owner="a", error="account_inactive",
                                    state={}, now=now, retry_at=None)   # given up
    async with db.transaction() as session:
        [listed] = await outbox.undelivered(session)
        assert (listed.status, listed.last_error) == ("failed", "account_inactive")
        assert (await outbox.backlog(session)).failed == 1
        assert await outbox.retry_now(session, owed.id, now=now)
        [fresh] = await outbox.claim_due(session, owner="b", now=now, lease_seconds=30, limit=1)
        assert fresh.attempts == 0   # tried again from its first attempt


async def test_where_a_debate_was_unfurled_is_kept_once(db: Database) -> None:
    debate = await add_debate(db)
    async with db.transaction() as session:
        for _ in range(2):
            await outbox.remember_unfurl(session, debate_id=debate.id, channel_id="C1",
                                         message_ts="1.2", url="https://x/debates/1",
                                         now=utcnow())
        assert [u.message_ts for u in await outbox.unfurls_of(session, debate.id)] == ["1.2"]
