"""Workspaces' own schedules in the real scheduler (APScheduler, the durable queue, a worker, the
fake Slack), its clock set by the test: a change made in the database by any process (added,
edited, paused, resumed, removed) reaches a running scheduler without a restart; a firing reads
the schedule as stored now; two replicas run a slot once; the debates are the workspace's,
under its daily cap."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.scheduling import workspace as wsched
from bot.scheduling.reports import ALREADY_CLAIMED, REMOVED
from bot.scheduling.scheduler import CalendarTrigger
from bot.scheduling.workspace import CONFIG_PREFIX
from bot.service import workspace_settings as ws
from engine.domain import utcnow
from storage import schedules as runs
from storage.db import Database
from storage.records import RunStatus
from tests.fakes.slack_server import FakeSlack
from tests.integration.test_scheduler import (
    MONDAY_SLOT,
    blocks_text,
    fake,  # noqa: F401  (a fixture)
    replica,
    roots,
    second_database,
    sqlite,  # noqa: F401  (a fixture)
    until,
)
from tests.support.service_fixtures import priced
from tests.support.storage_fixtures import BACKENDS, migrated_database

TEAM = "T0SECOND"
CHANNEL = "C0MARKETS"
FORM: dict[str, str] = {"name": "morning", "preset": "market", "cron": "0 8 * * 1-5",
                        "timezone": "Europe/Paris", "channel": CHANNEL,
                        "topics": "Brent crude breaks $90\nThe ECB cuts rates in June"}


async def _add(db: Database, **changes: str) -> str:
    """A schedule added by the workspace's admin (as App Home does, in any process); its id
    among the scheduler's."""
    fields = wsched.parse_form({**FORM, **changes}, presets=["market", "decision"])
    added = await wsched.add(db, TEAM, fields, by="UADMIN", admin=True, now=utcnow())
    return CONFIG_PREFIX + added.id


def _stored(job_id: str) -> str:
    return job_id.removeprefix(CONFIG_PREFIX)


async def _run(db: Database, job_id: str, slot: str) -> runs.ScheduledRun | None:
    async with db.transaction(readonly=True) as session:
        found = await runs.list_runs(session, schedule_id=job_id)
    return next((r for r in found if r.slot == slot), None)


async def _until_done(db: Database, job_id: str, slot: str) -> runs.ScheduledRun:
    async with asyncio.timeout(20.0):
        while (run := await _run(db, job_id, slot)) is None or run.status != RunStatus.DONE:
            await asyncio.sleep(0.02)
    return run


def _expr(aps: Any, job_id: str) -> str | None:
    job = aps.get_job(job_id)
    return None if job is None else str(job.trigger.calendar.expr)


async def test_changes_reach_a_running_scheduler_without_a_restart(
        sqlite: Database, fake: FakeSlack) -> None:  # noqa: F811
    admin = {"by": "UADMIN", "admin": True}
    async with replica(sqlite, fake, now="2024-05-05T12:00:00", schedules=()) as r:
        r.scheduler.sync_seconds = 0.05   # the test's; 30 s in a process
        aps = await r.scheduler.start()
        sync = aps.get_job("workspaces:sync")
        assert sync is not None and sync.trigger.interval.total_seconds() == 0.05
        job_id = await _add(sqlite)                                   # added
        await until(lambda: _expr(aps, job_id) == "0 8 * * 1-5")
        job = aps.get_job(job_id)
        assert isinstance(job.trigger, CalendarTrigger) and job.max_instances == 1
        assert str(job.trigger.timezone) == "Europe/Paris"
        await wsched.edit(sqlite, TEAM, _stored(job_id), {"cron": "30 9 * * *"},  # edited
                          now=utcnow(), **admin)
        await until(lambda: _expr(aps, job_id) == "30 9 * * *")
        await wsched.set_enabled(sqlite, TEAM, _stored(job_id), False, now=utcnow(),
                                 **admin)                               # paused
        await until(lambda: aps.get_job(job_id) is None)
        await wsched.set_enabled(sqlite, TEAM, _stored(job_id), True, now=utcnow(),
                                 **admin)                               # resumed
        await until(lambda: _expr(aps, job_id) == "30 9 * * *")
        r.clock.set("2024-05-06T07:30:02")                  # Monday 09:30 in Paris has come
        aps.modify_job(job_id, next_run_time=datetime.now(UTC))
        run = await _until_done(sqlite, job_id, "2024-05-06T07:30:00Z")
        await wsched.remove(sqlite, TEAM, _stored(job_id), now=utcnow(), **admin)  # removed
        await until(lambda: aps.get_job(job_id) is None and job_id not in r.scheduler.schedules)
        assert (await r.scheduler.run_slot(job_id, "2024-05-07T07:30:00Z")).status == REMOVED
        aps.shutdown(wait=False)
        records = [await r.rt.service.get(i) for i in run.debate_ids]
    assert len(records) == 2 and {d.request.topic for d in records} == {
        "Brent crude breaks $90", "The ECB cuts rates in June"}
    assert all(d.origin.team_id == TEAM and d.origin.schedule_id == job_id
               and d.origin.channel_id == CHANNEL for d in records)
    (digest,) = roots(fake)
    assert digest["ts"] == run.detail["message_ts"] and "Brent crude" in blocks_text(digest)


async def test_a_firing_reads_the_schedule_as_stored_now(
        sqlite: Database, fake: FakeSlack) -> None:  # noqa: F811
    """Paused or removed by another process since this one last synced: the slot is recorded
    as paused, or nothing runs."""
    admin = {"by": "UADMIN", "admin": True}
    async with replica(sqlite, fake, schedules=()) as r:
        job_id = await _add(sqlite)
        await r.scheduler.sync_workspaces()
        await wsched.edit(sqlite, TEAM, _stored(job_id), {"topics": ("Only this one",)},
                          now=utcnow(), **admin)
        await wsched.set_enabled(sqlite, TEAM, _stored(job_id), False, now=utcnow(), **admin)
        paused = await r.scheduler.fire(job_id)
        await wsched.set_enabled(sqlite, TEAM, _stored(job_id), True, now=utcnow(), **admin)
        r.clock.set("2024-05-07T06:00:03")
        ran = await r.scheduler.fire(job_id)
        await wsched.remove(sqlite, TEAM, _stored(job_id), now=utcnow(), **admin)
        r.clock.set("2024-05-08T06:00:03")
        gone = await r.scheduler.fire(job_id)
        assert job_id not in r.scheduler.schedules
    assert paused is not None and paused.status == RunStatus.PAUSED and paused.slot == MONDAY_SLOT
    assert ran is not None and ran.status == RunStatus.DONE and ran.digest is not None
    assert [o.title for o in ran.digest.outcomes] == ["Only this one"]
    assert gone is None and len(roots(fake)) == 1
    assert (await _run(sqlite, job_id, "2024-05-08T06:00:00Z")) is None


@pytest.mark.parametrize("backend", BACKENDS)
async def test_two_schedulers_run_a_workspaces_slot_once(
        backend: str, tmp_path: Path, fake: FakeSlack) -> None:  # noqa: F811
    async with migrated_database(backend, tmp_path) as first:
        other = await second_database(first)
        try:
            async with replica(first, fake, schedules=()) as a, \
                    replica(other, fake, schedules=()) as b:
                job_id = await _add(first)
                await asyncio.gather(a.scheduler.sync_workspaces(), b.scheduler.sync_workspaces())
                reports = await asyncio.gather(a.scheduler.fire(job_id),
                                               b.scheduler.fire(job_id))
        finally:
            await other.dispose()
        async with first.transaction(readonly=True) as session:
            found = await runs.list_runs(session, schedule_id=job_id)
    assert sorted(r.status for r in reports if r) == [ALREADY_CLAIMED, RunStatus.DONE]
    assert len(roots(fake)) == 1 and [r.slot for r in found] == [MONDAY_SLOT]


async def test_a_workspace_schedule_is_held_to_the_workspaces_cap(
        sqlite: Database, fake: FakeSlack) -> None:  # noqa: F811
    async with replica(sqlite, fake, schedules=(),
                       settings=lambda **kw: priced(daily_budget_usd=100.0, **kw)) as r:
        await ws.save(sqlite, TEAM, {"daily_budget_usd": 0.000001}, by="UADMIN", admin=True,
                      now=utcnow())
        job_id = await _add(sqlite)
        await r.scheduler.sync_workspaces()
        skipped = await r.scheduler.fire(job_id)
    assert skipped is not None and skipped.digest is not None and skipped.debate_ids == ()
    assert all("this workspace's daily budget has $0.00" in o.reason
               for o in skipped.digest.outcomes)
    assert "this workspace" in blocks_text(roots(fake)[0])
