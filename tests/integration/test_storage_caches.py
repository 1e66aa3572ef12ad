"""The judge cache and human evidence."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from engine.domain import Evidence, utcnow
from storage import caches, evidence, journal
from storage.db import Database
from storage.evidence import DbEvidenceSource
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


async def test_judge_cache_put_get_expire_and_replace(db: Database) -> None:
    now = utcnow()
    value = {"scores": [7.5, None, 8], "rationale": "clear"}
    async with db.transaction() as session:
        assert await caches.judge_cache_get(session, "k", now) is None
        await caches.judge_cache_put(session, "k", value, now + timedelta(hours=1))
        assert await caches.judge_cache_get(session, "k", now) == value
        assert await caches.judge_cache_get(session, "k", now + timedelta(hours=2)) is None
        await caches.judge_cache_put(session, "k", {"scores": [1]}, now + timedelta(hours=3))
        assert await caches.judge_cache_get(session, "k", now + timedelta(hours=2)) == {
            "scores": [1]}
        assert await caches.judge_cache_purge(session, now + timedelta(hours=4)) == 1
        assert await caches.judge_cache_get(session, "k", now) is None


async def test_concurrent_cache_puts_do_not_conflict(db: Database) -> None:
    async def put(i: int) -> None:
        async with db.transaction() as session:
            await caches.judge_cache_put(session, "same", {"i": i},
                                         utcnow() + timedelta(hours=1))

    await asyncio.gather(*(put(i) for i in range(5)))
    async with db.transaction(readonly=True) as session:
        stored = await caches.judge_cache_get(session, "same", utcnow())
    assert stored is not None and stored["i"] in range(5)


async def test_evidence_is_stored_once_per_source_and_read_in_order(db: Database) -> None:
    debate = await add_debate(db)
    now = utcnow()
    later = Evidence(author="U2", text="second", at=now + timedelta(seconds=5), source_id="C:2")
    earlier = Evidence(author="U1", text="first", at=now, source_id="C:1")
    anonymous = Evidence(author="U3", text="no source", at=now + timedelta(seconds=9))
    async with db.transaction() as session:
        assert await evidence.add(session, debate_id=debate.id, evidence=later)
        assert await evidence.add(session, debate_id=debate.id, evidence=earlier)
        assert not await evidence.add(session, debate_id=debate.id, evidence=earlier)
        assert await evidence.add(session, debate_id=debate.id, evidence=anonymous)
        assert await evidence.add(session, debate_id=debate.id, evidence=anonymous)
    items = await DbEvidenceSource(db).evidence(debate.id)
    assert [e.text for e in items] == ["first", "second", "no source", "no source"]
    assert items[0] == earlier
    assert list(await DbEvidenceSource(db).evidence("other")) == []


async def test_concurrent_lookups_share_queries_and_each_gets_its_own(db: Database) -> None:
    debates = [await add_debate(db) for _ in range(6)]
    now = utcnow()
    async with db.transaction() as session:
        for n, debate in enumerate(debates):
            for i in range(n):
                await evidence.add(session, debate_id=debate.id, evidence=Evidence(
                    author=f"U{n}", text=f"{n}.{i}", at=now + timedelta(seconds=i)))
        await caches.judge_cache_put(session, "hit", {"v": 1}, now + timedelta(hours=1))
        await caches.judge_cache_put(session, "gone", {"v": 2}, now - timedelta(seconds=1))
    source, cache = DbEvidenceSource(db), caches.DbStepCache(db, ttl_seconds=3600)
    lookups = journal.lookups_for(db)
    before = lookups.transactions
    found, hits = await asyncio.gather(
        asyncio.gather(*(source.evidence(d.id) for d in [*debates, *debates])),
        asyncio.gather(*(cache.get(key) for key in ("hit", "gone", "miss", "hit"))))
    assert [[e.text for e in items] for items in found] == 2 * [
        [f"{n}.{i}" for i in range(n)] for n in range(6)]
    assert hits == [{"v": 1}, None, None, {"v": 1}]
    assert hits[0] is not hits[3] and found[1] is not found[7]   # nobody shares a mutable value
    assert lookups.transactions - before < 12 + 4
