"""Pre-meeting briefs: planned and stored, started early enough, posted once before the meeting."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.scheduling.briefs import parse_brief
from bot.scheduling.scheduler import Scheduler
from engine.errors import InvalidRequest
from storage import briefs
from storage import schedules as runs
from storage.db import Database
from storage.records import BriefStatus
from tests.fakes.slack_server import FakeSlack
from tests.integration.test_scheduler import (
    blocks_text,
    fake,
    replica,
    roots,
    second_database,
    sqlite,
    until,
    utc,
)
from tests.support.storage_fixtures import BACKENDS, migrated_database

__all__ = ["fake", "sqlite"]  # fixtures

MEETING_CHANNEL = "C0MEETING"
NINE_PARIS = "2024-05-06T07:00:00"            # 09:00 in Paris, Monday


async def run_due(scheduler: Scheduler) -> list[str]:
    """Run every pending brief whose start time has come, here and now (as the brief jobs and
    the sweep do); the ids this replica ran."""
    due = await scheduler.briefs.pending(due=True)
    ran = await asyncio.gather(*(scheduler.briefs.run(b.id) for b in due))
    return [brief.id for brief, done in zip(due, ran, strict=True) if done]


async def stored(db: Database, brief_id: str) -> briefs.Brief:
    async with db.transaction() as session:
        return await briefs.get(session, brief_id)


async def test_a_brief_is_posted_before_its_time(sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake, now=NINE_PARIS) as r:
        command = parse_brief(f"brief Adopt Kafka for billing at 09:30 in <#{MEETING_CHANNEL}|x>",
                              now=r.clock(), tz=ZoneInfo(r.scheduler.settings.timezone))
        plan = await r.scheduler.plan_brief(topic=command.topic, at=command.at,
                                    channel=command.channel or "", requested_by="UALICE")
        assert plan.meeting_at == utc("2024-05-06T07:30:00")
        assert plan.start_at == plan.meeting_at - timedelta(minutes=15)
        assert await run_due(r.scheduler) == []           # 09:00: not yet
        r.clock.now = plan.start_at
        assert await run_due(r.scheduler) == [plan.id]
        assert await run_due(r.scheduler) == []           # once only
        assert await r.scheduler.briefs.run(plan.id) is False
    (message,) = roots(fake, MEETING_CHANNEL)
    body = blocks_text(message)
    for part in ("Decision brief", "Adopt Kafka for billing", "Arguments map", "Agreements",
                 "Points to discuss", "Full transcript"):
        assert part in body
    brief = await stored(sqlite, plan.id)
    assert brief.status == BriefStatus.POSTED and brief.message_ts == message["ts"]
    assert brief.debate_id is not None
    assert utc(brief.detail["posted_at"][:19]) < plan.meeting_at       # before its time
    async with sqlite.transaction() as session:
        (run,) = await runs.list_runs(session, schedule_id=f"brief:{plan.id}")
    assert run.status == "done" and run.debate_ids == (brief.debate_id,)


async def test_a_planned_brief_survives_a_restart(sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake, now=NINE_PARIS, worker=False) as first:
        plan = await first.scheduler.plan_brief(topic="Move billing to PostgreSQL",
                                    at=utc("2024-05-06T08:00:00"), channel=MEETING_CHANNEL,
                                    requested_by="UALICE")
    assert roots(fake, MEETING_CHANNEL) == []
    # a new process: its scheduler loads the pending brief and gives it a date job
    async with replica(sqlite, fake, now="2024-05-06T07:45:00") as second:
        aps = await second.scheduler.start()
        assert aps is not None and aps.get_job(f"brief:{plan.id}") is not None
        assert second.scheduler.aps is aps
        await until(lambda: len(roots(fake, MEETING_CHANNEL)) == 1)
        async with asyncio.timeout(10):
            while (await stored(sqlite, plan.id)).status != BriefStatus.POSTED:
                await asyncio.sleep(0.02)
        aps.shutdown(wait=False)
    assert "Move billing to PostgreSQL" in blocks_text(roots(fake, MEETING_CHANNEL)[0])


async def test_a_brief_found_after_its_meeting_is_reported_not_run(
        sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake, now=NINE_PARIS) as r:
        plan = await r.scheduler.plan_brief(topic="Adopt Kafka", at=utc("2024-05-06T07:30:00"),
                                    channel=MEETING_CHANNEL, requested_by="UALICE")
        r.clock.set("2024-05-06T07:31:00")          # the service was down until after it
        assert await run_due(r.scheduler) == [plan.id]
        assert await r.rt.service.recent() == []
    brief = await stored(sqlite, plan.id)
    assert brief.status == BriefStatus.MISSED and "meeting had started" in brief.detail["reason"]
    assert "could not be prepared" in blocks_text(roots(fake, MEETING_CHANNEL)[0])


@pytest.mark.parametrize(("at", "channel", "topic", "message"), [
    ("2024-05-06T06:59:00", MEETING_CHANNEL, "Adopt Kafka", "already passed"),
    ("2024-05-06T08:00:00", "not a channel!", "Adopt Kafka", "not a channel"),
    ("2024-05-06T08:00:00", MEETING_CHANNEL, "   ", "topic is empty"),
])
async def test_planning_a_brief_refuses_bad_input(at: str, channel: str, topic: str,
                                                  message: str, sqlite: Database) -> None:
    async with replica(sqlite, None, now=NINE_PARIS, worker=False) as r:
        with pytest.raises(InvalidRequest, match=message):
            await r.scheduler.plan_brief(topic=topic, at=utc(at), channel=channel,
                                 requested_by="UALICE")
        async with sqlite.transaction() as session:
            assert await briefs.list_pending(session) == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_two_replicas_post_a_brief_once(backend: str, tmp_path: Path,
                                              fake: FakeSlack) -> None:
    async with migrated_database(backend, tmp_path) as first:
        other = await second_database(first)
        try:
            async with replica(first, fake, now=NINE_PARIS) as a, \
                    replica(other, fake, now=NINE_PARIS) as b:
                plan = await a.scheduler.plan_brief(topic="Adopt Kafka",
                                            at=utc("2024-05-06T07:10:00"),
                                            channel=MEETING_CHANNEL, requested_by="UALICE")
                assert plan.start_at == utc(NINE_PARIS)      # late: starts now
                ran = await asyncio.gather(run_due(a.scheduler), run_due(b.scheduler))
        finally:
            await other.dispose()
    assert sorted(len(x) for x in ran) == [0, 1]
    assert len(roots(fake, MEETING_CHANNEL)) == 1
