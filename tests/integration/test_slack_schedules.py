"""`/debate brief …` and `/debate schedules [pause|resume ID]` through the real Bolt app."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from storage import briefs
from tests.support.slack_fixtures import REVIEWER, USER, Harness, slack_harness

MORNING = {"id": "morning", "cron": "0 8 * * 1-5", "timezone": "UTC", "channel": "C0123ABCD",
           "topics": ["NVDA above its 50-day average"]}


async def _response(h: Harness, count: int = 1) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while len(h.fake.responses) < count:
            await asyncio.sleep(0.02)
    return h.fake.responses[count - 1]


async def test_a_brief_is_planned_from_slack(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        reply = await h.command("brief Adopt Kafka for billing at 23:59 in <#C0123ABCD|eng>")
        assert reply.status == 200
        answer = await _response(h)
        assert "Brief planned" in answer["text"] and "Adopt Kafka for billing" in answer["text"]
        async with h.rt.db.transaction(readonly=True) as session:
            pending = await briefs.list_pending(session)
        assert [(b.topic, b.channel) for b in pending] == [("Adopt Kafka for billing",
                                                            "C0123ABCD")]


async def test_a_brief_without_a_time_gets_the_usage(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        reply = await h.command("brief Adopt Kafka for billing tomorrow")
        assert reply.status == 200 and "time" in reply.json()["text"]
        async with h.rt.db.transaction(readonly=True) as session:
            assert await briefs.list_pending(session) == []


async def test_schedules_are_listed_and_only_reviewers_pause_them(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0, schedules=(MORNING,)) as h:
        await h.command("schedules")
        listing = await _response(h, 1)
        assert "morning" in str(listing) and "active" in str(listing)
        await h.command("schedules pause morning", user=USER)
        refused = await _response(h, 2)
        assert "only reviewers" in str(refused)
        await h.command("schedules pause morning", user=REVIEWER)
        paused = await _response(h, 3)
        assert "paused" in str(paused)
        await h.command("schedules resume morning", user=REVIEWER)
        resumed = await _response(h, 4)
        assert "active" in str(resumed)
