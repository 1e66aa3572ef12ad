"""The durable queue: claims in order, never twice, leases renew, expire and get reclaimed."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from engine.domain import utcnow
from storage import audit, debates, queue
from storage.db import Database
from storage.records import DebateRecord, DebateStatus
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db, pg_db = fx.db, fx.pg_db  # fixtures (until conftest.py imports them)
LEASE = 30.0


async def _claim(db: Database, worker: str, now_offset: float = 0.0) -> DebateRecord | None:
    async with db.transaction() as session:
        return await queue.claim(session, worker_id=worker, lease_seconds=LEASE,
                                 now=utcnow() + timedelta(seconds=now_offset))


async def test_claim_takes_the_oldest_and_starts_it(db: Database) -> None:
    newer = await add_debate(db, "newer", seconds_ago=1)
    older = await add_debate(db, "older", seconds_ago=10)
    claimed = await _claim(db, "w1")
    assert claimed is not None and claimed.id == older.id
    assert claimed.status is DebateStatus.DEBATING
    assert claimed.lease_owner == "w1" and claimed.attempts == 1
    assert claimed.started_at is not None and claimed.lease_expires_at is not None
    second = await _claim(db, "w1")
    assert second is not None and second.id == newer.id
    assert await _claim(db, "w1") is None
    async with db.transaction(readonly=True) as session:
        kinds = [(e.kind, e.actor) for e in await audit.events(session, older.id)]
        depth = await queue.depth(session)
    assert kinds[-2:] == [("status_changed", "w1"), ("claimed", "w1")]
    assert depth == {"queued": 0, "debating": 2, "judging": 0}


async def test_concurrent_workers_never_get_the_same_debate(db: Database) -> None:
    n = 12 if db.dialect == "postgresql" else 6
    for i in range(n):
        await add_debate(db, f"topic {i}", seconds_ago=n - i)
    workers = n + 4 if db.dialect == "postgresql" else n + 2
    claims = await asyncio.gather(*(_claim(db, f"w{i}") for i in range(workers)))
    taken = [c.id for c in claims if c is not None]
    assert len(taken) == n and len(set(taken)) == n
    assert claims.count(None) == workers - n


async def test_an_expired_lease_is_reclaimed_and_attempts_count_up(db: Database) -> None:
    record = await add_debate(db)
    first = await _claim(db, "w1")
    assert first is not None and first.id == record.id
    assert await _claim(db, "w2") is None  # lease still valid
    reclaimed = await _claim(db, "w2", now_offset=LEASE + 1)
    assert reclaimed is not None and reclaimed.id == record.id
    assert reclaimed.lease_owner == "w2" and reclaimed.attempts == 2
    assert reclaimed.status is DebateStatus.DEBATING
    async with db.transaction(readonly=True) as session:
        last = (await audit.events(session, record.id))[-1]
    assert last.kind == "reclaimed"
    assert last.data == {"worker": "w2", "previous_owner": "w1", "attempt": 2}


async def test_a_judging_debate_is_reclaimed_in_place(db: Database) -> None:
    record = await add_debate(db)
    await _claim(db, "w1")
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.JUDGING, actor="w1")
    reclaimed = await _claim(db, "w2", now_offset=LEASE + 1)
    assert reclaimed is not None and reclaimed.status is DebateStatus.JUDGING


async def test_only_the_owner_renews(db: Database) -> None:
    record = await add_debate(db)
    await _claim(db, "w1")
    later = utcnow() + timedelta(seconds=20)
    async with db.transaction() as session:
        assert await queue.renew(session, debate_id=record.id, worker_id="w1",
                                 lease_seconds=LEASE, now=later)
        assert not await queue.renew(session, debate_id=record.id, worker_id="w2",
                                     lease_seconds=LEASE, now=later)
    # renewed at +20 s for 30 s: still held at +40 s
    assert await _claim(db, "w2", now_offset=40) is None
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
    assert stored.lease_expires_at == later + timedelta(seconds=LEASE)


async def test_release_requeues_a_running_debate(db: Database) -> None:
    record = await add_debate(db)
    await _claim(db, "w1")
    async with db.transaction() as session:
        assert not await queue.release(session, debate_id=record.id, worker_id="w2")
        assert await queue.release(session, debate_id=record.id, worker_id="w1")
        stored = await debates.get(session, record.id)
    assert stored.status is DebateStatus.QUEUED and stored.lease_owner is None
    again = await _claim(db, "w3")
    assert again is not None and again.id == record.id and again.attempts == 2


async def test_finished_debates_are_never_claimed(db: Database) -> None:
    record = await add_debate(db)
    await _claim(db, "w1")
    async with db.transaction() as session:
        done = await debates.transition(session, record.id, DebateStatus.COMPLETED, actor="w1")
    assert done.lease_owner is None
    assert await _claim(db, "w2", now_offset=LEASE * 10) is None


async def test_postgres_skip_locked_passes_over_a_debate_being_claimed(pg_db: Database) -> None:
    """While one worker's claim is still uncommitted, another takes the next debate at once."""
    older = await add_debate(pg_db, "older", seconds_ago=10)
    newer = await add_debate(pg_db, "newer", seconds_ago=1)
    async with pg_db.transaction() as session:
        first = await queue.claim(session, worker_id="w1", lease_seconds=LEASE, now=utcnow())
        second = await asyncio.wait_for(_claim(pg_db, "w2"), timeout=30)
    assert first is not None and first.id == older.id
    assert second is not None and second.id == newer.id


async def _claim_many(db: Database, worker: str, limit: int) -> list[DebateRecord]:
    async with db.transaction() as session:
        return await queue.claim_many(session, worker_id=worker, lease_seconds=LEASE,
                                      now=utcnow(), limit=limit)


async def test_claim_many_takes_the_oldest_up_to_the_limit_each_audited(db: Database) -> None:
    made = [await add_debate(db, f"topic {i}", seconds_ago=10 - i) for i in range(5)]
    assert await _claim_many(db, "w0", 0) == []  # no free slot: nothing taken
    first = await _claim_many(db, "w1", 3)
    assert [r.id for r in first] == [m.id for m in made[:3]]
    assert all(r.status is DebateStatus.DEBATING and r.lease_owner == "w1" and r.attempts == 1
               for r in first)
    rest = await _claim_many(db, "w2", 10)
    assert [r.id for r in rest] == [m.id for m in made[3:]]
    assert await _claim_many(db, "w3", 10) == []
    async with db.transaction(readonly=True) as session:
        for record in first:
            kinds = [(e.kind, e.actor) for e in await audit.events(session, record.id)]
            assert kinds[-2:] == [("status_changed", "w1"), ("claimed", "w1")]
        assert (await audit.verify(session)).ok


async def test_postgres_claim_many_skips_what_another_worker_is_claiming(pg_db: Database
                                                                         ) -> None:
    made = [await add_debate(pg_db, f"topic {i}", seconds_ago=10 - i) for i in range(4)]
    async with pg_db.transaction() as session:
        first = await queue.claim_many(session, worker_id="w1", lease_seconds=LEASE,
                                       now=utcnow(), limit=2)
        second = await asyncio.wait_for(_claim_many(pg_db, "w2", 10), timeout=30)
    assert [r.id for r in first] == [m.id for m in made[:2]]
    assert [r.id for r in second] == [m.id for m in made[2:]]
