"""Pre-meeting briefs: the `brief TOPIC at 09:30 [in #channel]` command, planning a brief (stored
ahead, started early enough to finish before the meeting) and running it exactly once across
replicas (each brief claims its own slot), then posting the one-page brief through the publisher.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.scheduling.calendar import Clock
from bot.scheduling.config import parse_channel
from bot.scheduling.digests import Digests
from bot.scheduling.publishing import BriefNote, Posted, Publisher
from bot.scheduling.reports import BriefPlan
from bot.service.runtime import Runtime
from bot.service.traces import slot_span
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded, InvalidRequest
from storage import audit
from storage import briefs as brief_store
from storage import schedules as runs
from storage.briefs import Brief
from storage.records import BriefStatus, Origin, RunStatus

log = logging.getLogger("dialectic.scheduler")

BRIEF_MIN_LEAD = timedelta(minutes=15)
BRIEF_POST_MARGIN = 60.0      # stop waiting this long before the meeting, to post in time


# --------------------------------------------------------------------------------------------
# the command

_BRIEF = re.compile(
    r"^\s*(?:brief\s+)?(?P<topic>\S.*?)\s+at\s+(?P<hour>\d{1,2})[:h.](?P<minute>\d{2})"
    r"\s*(?P<half>[ap]\.?m\.?)?(?:\s+in\s+(?P<channel>\S+))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
BRIEF_USAGE = "brief TOPIC at HH:MM [in #channel]   e.g. brief Adopt Kafka for billing at 09:30"


@dataclass(frozen=True, slots=True)
class BriefCommand:
    """A parsed brief request: what, when (aware, in the configured zone), where (None: here)."""

    topic: str
    at: datetime
    channel: str | None = None


def _clock_time(hour: int, minute: int, half: str | None) -> time:
    if half:
        if not 1 <= hour <= 12:
            raise InvalidRequest(f"{hour} is not an hour on a 12-hour clock")
        hour = hour % 12 + (12 if half.lower().startswith("p") else 0)
    if hour > 23 or minute > 59:
        raise InvalidRequest(f"{hour:02d}:{minute:02d} is not a time of day (use HH:MM, 24-hour)")
    return time(hour, minute)


def meeting_time(at: time, *, now: datetime, tz: ZoneInfo) -> datetime:
    """`at` today in `tz`, or tomorrow when that moment is already past."""
    local_now = now.astimezone(tz)

    def on(day: date) -> datetime:
        return datetime.combine(day, at, tzinfo=tz)

    today = on(local_now.date())
    return today if today > local_now else on(local_now.date() + timedelta(days=1))


def parse_brief(text: str, *, now: datetime, tz: ZoneInfo) -> BriefCommand:
    """Parse `brief TOPIC at 09:30 [in #channel]` (InvalidRequest with the usage if it is not)."""
    match = _BRIEF.match(text)
    if match is None:
        raise InvalidRequest(f"I could not read a time in that: use `{BRIEF_USAGE}`")
    clock = _clock_time(int(match["hour"]), int(match["minute"]), match["half"])
    channel = None
    if match["channel"]:
        try:
            channel = parse_channel(match["channel"])
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
    topic = match["topic"].strip()
    if topic.lower() == "brief":
        raise InvalidRequest(f"what should the brief be about? use `{BRIEF_USAGE}`")
    return BriefCommand(topic=topic, at=meeting_time(clock, now=now, tz=tz), channel=channel)


def brief_start(at: datetime, *, now: datetime, depth: int, call_timeout: float,
                min_lead: timedelta = BRIEF_MIN_LEAD) -> datetime:
    """When a brief's debate starts so it finishes before `at`: the larger of `min_lead` and
    the plan's dependent rounds times one call's timeout, ahead of it; never in the past."""
    lead = max(min_lead, timedelta(seconds=depth * call_timeout))
    return max(at - lead, now)


# --------------------------------------------------------------------------------------------
# planning and running


def plan_of(brief: Brief) -> BriefPlan:
    return BriefPlan(id=brief.id, topic=brief.topic, channel=brief.channel,
                     requested_by=brief.requested_by, meeting_at=brief.meeting_at,
                     start_at=brief.start_at, status=brief.status.value)


class Briefs:
    """Plans and runs briefs; `on_planned` schedules a planned brief's job (the scheduler's)."""

    def __init__(self, rt: Runtime, digests: Digests, *, publisher: Publisher | None,
                 clock: Clock, on_planned: Callable[[Brief], None]) -> None:
        self.rt = rt
        self.digests = digests
        self.publisher = publisher
        self.clock = clock
        self.on_planned = on_planned

    async def plan(self, *, topic: str, at: datetime, channel: str,
                   requested_by: str) -> BriefPlan:
        """Store a brief to run before `at` and schedule it (InvalidRequest if it cannot)."""
        now = self.clock()
        if at.tzinfo is None:
            raise InvalidRequest("the meeting time needs a time zone")
        if at <= now:
            raise InvalidRequest("that meeting time has already passed")
        try:
            channel = parse_channel(channel)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        request = DebateRequest(topic=topic, preset="brief", requested_by=requested_by)
        # InvalidRequest for a bad topic; timed as a new run (a cached answer may expire first)
        estimate = await self.rt.service.estimate(request.model_copy(update={"no_cache": True}))
        start = brief_start(at, now=now, depth=estimate.depth,
                            call_timeout=self.rt.engine.call_timeout)
        brief = Brief(id=uuid.uuid4().hex[:16], topic=topic.strip(), channel=channel,
                      requested_by=requested_by, meeting_at=at.astimezone(UTC),
                      start_at=start.astimezone(UTC))
        async with self.rt.db.transaction() as session:
            brief = await brief_store.create(session, brief=brief, now=now)
            await audit.append(session, debate_id=None, kind="brief_planned", actor=requested_by,
                               data={"brief_id": brief.id, "topic": brief.topic,
                                     "channel": channel, "meeting_at": brief.meeting_at,
                                     "start_at": brief.start_at}, at=now)
        self.on_planned(brief)
        return plan_of(brief)

    async def pending(self, *, due: bool = False) -> list[Brief]:
        """Briefs still to run (only those whose start time has come, with `due`)."""
        async with self.rt.db.transaction(readonly=True) as session:
            return await brief_store.list_pending(session, due_by=self.clock() if due else None)

    async def run(self, brief_id: str) -> bool:
        """Claim the brief's slot and run it; False when it is not pending or another won it."""
        now = self.clock()
        async with self.rt.db.transaction() as session:
            brief = await brief_store.get(session, brief_id)
            if brief.status is not BriefStatus.PENDING:
                return False
            slot = f"brief:{brief.id}"
            if not await runs.claim_slot(session, schedule_id=slot, slot=slot, now=now):
                return False
            await brief_store.start(session, brief.id, now=now)
        try:
            with slot_span(slot, slot):  # the brief's debate's trace starts here
                await self._prepare(brief)
        except asyncio.CancelledError:
            await asyncio.shield(self._end(brief, BriefStatus.FAILED, None, None,
                                           {"reason": "the service stopped"}))
            raise
        except Exception as exc:  # recorded on the brief, logged
            log.exception("brief %s failed", brief.id)
            await self._end(brief, BriefStatus.FAILED, None, None,
                            {"reason": f"{type(exc).__name__}: {exc}"})
        return True

    async def _prepare(self, brief: Brief) -> None:
        if self.clock() >= brief.meeting_at:
            await self._missed(brief, "the meeting had started before it could run")
            return
        request = DebateRequest(topic=brief.topic, preset="brief",
                                requested_by=brief.requested_by)
        origin = Origin(surface="schedule", schedule_id=f"brief:{brief.id}",
                        channel_id=brief.channel)
        try:
            sub = await self.rt.service.submit(request, origin=origin,
                                               idempotency_key=f"brief:{brief.id}")
        except (BudgetExceeded, InvalidRequest) as exc:
            await self._missed(brief, str(exc))
            return
        self.rt.notify_workers()
        left = (brief.meeting_at - self.clock()).total_seconds() - BRIEF_POST_MARGIN
        record = (await self.digests.wait_for([sub.record.id], max(left, 1.0)))[sub.record.id]
        note = BriefNote(topic=brief.topic, meeting_at=brief.meeting_at, record=record,
                         url=self.rt.url(record.id), rehearsal=self.rt.is_rehearsal)
        posted = await self._deliver(brief, note)
        status = BriefStatus.POSTED if posted.ts else BriefStatus.READY
        await self._end(brief, status, record.id, posted.ts, {
            "debate_status": record.status.value, "posted_at": self.clock(),
            "message": posted.message})

    async def _deliver(self, brief: Brief, note: BriefNote) -> Posted:
        if self.publisher is None:
            log.info("brief %s (Slack is off; kept in the database): %s", brief.id,
                     note.missed or brief.topic)
            return Posted(ts=None)
        return await self.publisher.brief(brief.channel, note)

    async def _missed(self, brief: Brief, reason: str) -> None:
        log.warning("brief %s not prepared: %s", brief.id, reason)
        note = BriefNote(topic=brief.topic, meeting_at=brief.meeting_at, missed=reason)
        posted = await self._deliver(brief, note)
        await self._end(brief, BriefStatus.MISSED, None, posted.ts, {"reason": reason})

    async def _end(self, brief: Brief, status: BriefStatus, debate_id: str | None,
                   ts: str | None, detail: dict[str, Any]) -> None:
        slot = f"brief:{brief.id}"
        now = self.clock()
        run_status = {BriefStatus.POSTED: RunStatus.DONE, BriefStatus.READY: RunStatus.DONE,
                      BriefStatus.MISSED: RunStatus.MISSED}.get(status, RunStatus.FAILED)
        async with self.rt.db.transaction() as session:
            await brief_store.finish(session, brief.id, status=status, debate_id=debate_id,
                                     message_ts=ts, detail=detail, now=now)
            await runs.finish_slot(session, schedule_id=slot, slot=slot, status=run_status,
                                   debate_ids=[debate_id] if debate_id else [],
                                   detail={"brief_status": status.value}, now=now)
