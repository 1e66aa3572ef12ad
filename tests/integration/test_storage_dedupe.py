"""Slack delivery dedupe and scheduled slots: the first insert wins, everyone else learns so."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from engine.domain import utcnow
from storage import dedupe, schedules
from storage.db import Database
from storage.errors import NotFound
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


async def test_first_time_is_true_once(db: Database) -> None:
    async with db.transaction() as session:
        assert await dedupe.first_time(session, source="event", key="Ev1")
        assert not await dedupe.first_time(session, source="event", key="Ev1")
        assert await dedupe.first_time(session, source="action", key="Ev1")
        # the duplicate did not poison the transaction (PostgreSQL): it goes on and commits
        assert await dedupe.first_time(session, source="event", key="Ev2")
    async with db.transaction() as session:
        assert not await dedupe.first_time(session, source="event", key="Ev2")


async def test_first_time_races_have_one_winner(db: Database) -> None:
    async def deliver() -> bool:
        async with db.transaction() as session:
            return await dedupe.first_time(session, source="event", key="Ev-retry")

    assert sorted(await asyncio.gather(*(deliver() for _ in range(5)))) == [
        False, False, False, False, True]


async def test_purge_forgets_old_keys(db: Database) -> None:
    now = utcnow()
    async with db.transaction() as session:
        await dedupe.first_time(session, source="event", key="old", now=now - timedelta(hours=2))
        await dedupe.first_time(session, source="event", key="new", now=now)
        assert await dedupe.purge(session, before=now - timedelta(hours=1)) == 1
        assert await dedupe.first_time(session, source="event", key="old")
        assert not await dedupe.first_time(session, source="event", key="new")


async def test_claim_slot_twice_gives_one_true(db: Database) -> None:
    slot = "2024-11-22T08:00:00+00:00"

    async def fire() -> bool:
        async with db.transaction() as session:
            return await schedules.claim_slot(session, schedule_id="morning", slot=slot)

    assert sorted(await asyncio.gather(fire(), fire())) == [False, True]
    async with db.transaction() as session:
        assert await schedules.claim_slot(session, schedule_id="other", slot=slot)


async def test_finish_and_list_runs(db: Database) -> None:
    debate = await add_debate(db)
    async with db.transaction() as session:
        for slot in ("2024-11-21T08:00:00+00:00", "2024-11-22T08:00:00+00:00"):
            await schedules.claim_slot(session, schedule_id="morning", slot=slot)
        done = await schedules.finish_slot(
            session, schedule_id="morning", slot="2024-11-22T08:00:00+00:00",
            debate_ids=[debate.id], detail={"digest_ts": "1.2"},
        )
        runs = await schedules.list_runs(session, schedule_id="morning")
        with pytest.raises(NotFound):
            await schedules.finish_slot(session, schedule_id="morning", slot="nope")
    assert done.status == "done" and done.debate_ids == (debate.id,)
    assert done.detail == {"digest_ts": "1.2"} and done.finished_at is not None
    assert [(r.slot, r.status) for r in runs] == [
        ("2024-11-22T08:00:00+00:00", "done"), ("2024-11-21T08:00:00+00:00", "running")]


async def test_pause_and_resume(db: Database) -> None:
    async with db.transaction() as session:
        assert not await schedules.is_paused(session, "morning")
        await schedules.set_paused(session, "morning", True, "U1")
        assert await schedules.is_paused(session, "morning")
        await schedules.set_paused(session, "morning", False, "U2")
        assert not await schedules.is_paused(session, "morning")
