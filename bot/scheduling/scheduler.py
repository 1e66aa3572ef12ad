"""The scheduler: morning digests on cron slots and pre-meeting briefs, each run exactly once.

An APScheduler 3 `AsyncIOScheduler` (started by the process that hosts it) fires every enabled
`[[schedules]]` entry through a `CalendarTrigger` over the schedule's `CronCalendar`. A firing
takes its slot from that same calendar (its latest fire time), then claims
`(schedule_id, slot)` under the database's unique key: of several replicas firing the same cron,
only the winner runs it (bot/scheduling/digests.py). On start, the latest slot missed while
nothing ran is run once when still within its grace; older missed slots are recorded as "missed"
and named in the next digest, never run. Briefs (bot/scheduling/briefs.py) get a date job each,
and an interval sweep picks up briefs planned on other replicas.

Workspaces' own schedules (bot/scheduling/workspace.py, the `workspace_schedules` table) join
the configured ones: read at start, then every WORKSPACE_SYNC_SECONDS, so an addition, edit,
pause or removal made by any process reaches every scheduler within that time, without a
restart. A firing reads its schedule again (removed: nothing runs; paused: the slot is recorded
as paused) and claims its slot like any other, so each slot runs once across processes. A slot
whose workspace has not installed the app is recorded as skipped with the reason.

Surfaces use one `Scheduler` per process: `views`, `pause`, `resume`, `run_now`, `plan_brief`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

from bot.scheduling.briefs import Briefs
from bot.scheduling.calendar import (
    CatchUp,
    Clock,
    CronCalendar,
    manual_slot,
    parse_slot,
    plan_catch_up,
    slot_key,
)
from bot.scheduling.config import ScheduleConfig
from bot.scheduling.digests import RUN_SCAN, Digests
from bot.scheduling.publishing import Publisher
from bot.scheduling.reports import ALREADY_CLAIMED, REMOVED, BriefPlan, RunReport, ScheduleView
from bot.scheduling.settings import SchedulingSettings
from bot.scheduling.workspace import CONFIG_PREFIX, config_of
from bot.service.runtime import Runtime
from bot.service.traces import slot_span
from engine.errors import InvalidRequest
from storage import audit, workspace_schedules
from storage import schedules as runs
from storage.briefs import Brief
from storage.records import RunStatus

log = logging.getLogger("dialectic.scheduler")

BRIEF_SWEEP_SECONDS = 60
WORKSPACE_SYNC_SECONDS = 30
_TICK = timedelta(microseconds=1)


class CalendarTrigger(BaseTrigger):  # type: ignore[misc]  # APScheduler 3 ships no type hints
    """An APScheduler trigger that fires a schedule's calendar, so APScheduler fires exactly
    the slots `CronCalendar` computes (and `Scheduler.fire` claims)."""

    __slots__ = ("calendar",)

    def __init__(self, calendar: CronCalendar) -> None:
        self.calendar = calendar

    @property
    def timezone(self) -> ZoneInfo:
        return self.calendar.tz

    def get_next_fire_time(self, previous_fire_time: datetime | None,
                           now: datetime) -> datetime | None:
        """The fire time after the previous one, even if already past (APScheduler coalesces or
        misfires those, as with its own triggers); with none, the first at or after `now`."""
        if previous_fire_time is not None and now >= previous_fire_time:
            return self.calendar.next_fire(previous_fire_time)
        return self.calendar.next_fire(now - _TICK)

    def __str__(self) -> str:
        return f"cron[{self.calendar.expr!r} in {self.calendar.tz}]"


class Scheduler:
    """Fires the configured digests and the planned briefs, each once across every replica."""

    def __init__(self, rt: Runtime, settings: SchedulingSettings, *,
                 publisher: Publisher | None = None, clock: Clock | None = None,
                 wait_timeout: float | None = None) -> None:
        self.rt = rt
        self.settings = settings
        self.schedules = {config.id: config for config in settings.schedules}
        self.sync_seconds = WORKSPACE_SYNC_SECONDS
        self.clock: Clock = clock or rt.service.clock
        self.digests = Digests(rt, publisher=publisher, clock=self.clock,
                               wait_timeout=wait_timeout,
                               allow_private_sources=settings.allow_private_sources)
        self.briefs = Briefs(rt, self.digests, publisher=publisher, clock=self.clock,
                             on_planned=self._add_brief_job)
        self.aps: AsyncIOScheduler | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def schedule(self, schedule_id: str) -> ScheduleConfig:
        try:
            return self.schedules[schedule_id]
        except KeyError:
            known = ", ".join(sorted(i for i in self.schedules
                                     if not i.startswith(CONFIG_PREFIX))) or "none configured"
            raise InvalidRequest(f"unknown schedule {schedule_id!r} (known: {known})") from None

    # --- lifecycle ---

    async def start(self) -> AsyncIOScheduler:
        """Catch up on missed slots, then start APScheduler with every enabled cron."""
        # every job: a backlog of fire times runs once, and never two runs of a job at a time
        aps = AsyncIOScheduler(timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1})
        await self.sync_workspaces()   # theirs too, before the catch-up
        for config in self.schedules.values():
            self._set_job(aps, config)
        for schedule_id, slot in await self.catch_up():
            aps.add_job(self.run_slot, "date", run_date=datetime.now(UTC),
                        args=[schedule_id, slot], id=f"catch-up:{schedule_id}",
                        misfire_grace_time=None)
        aps.add_job(self.sweep_briefs, "interval", seconds=BRIEF_SWEEP_SECONDS,
                    id="briefs:sweep")
        aps.add_job(self.sync_workspaces, "interval", seconds=self.sync_seconds,
                    id="workspaces:sync")
        aps.add_listener(self._on_missed, EVENT_JOB_MISSED)
        self.aps = aps
        aps.start()
        for brief in await self.briefs.pending():
            self._add_brief_job(brief)
        log.info("scheduler started: %d schedule(s) enabled",
                 sum(c.enabled for c in self.schedules.values()))
        return aps

    def _set_job(self, aps: AsyncIOScheduler, config: ScheduleConfig) -> None:
        """Fire `config` on its calendar from now (replacing its job), or not at all if it is
        disabled."""
        if config.enabled:
            aps.add_job(self.fire, CalendarTrigger(config.calendar), args=[config.id],
                        id=config.id, name=f"digest {config.id}",
                        misfire_grace_time=max(config.misfire_grace_seconds, 1),
                        replace_existing=True)
        elif aps.get_job(config.id) is not None:
            aps.remove_job(config.id)

    async def sync_workspaces(self) -> None:
        """Read the workspaces' schedules and fire what changed: new ones get a job, edited ones
        a new one, paused and removed ones none."""
        async with self.rt.db.transaction(readonly=True) as session:
            stored = await workspace_schedules.list_all(session)
        fresh = {}
        for schedule in stored:
            try:
                fresh[CONFIG_PREFIX + schedule.id] = config_of(schedule)
            except ValueError as exc:   # a stored value no longer valid: said, not fired
                log.error("workspace schedule %s (%s of %s) cannot run: %s", schedule.id,
                          schedule.name, schedule.team_id, exc)
        aps = self.aps if self.aps is not None and self.aps.running else None
        for gone in [i for i in self.schedules if i.startswith(CONFIG_PREFIX) and i not in fresh]:
            del self.schedules[gone]
            if aps is not None and aps.get_job(gone) is not None:
                aps.remove_job(gone)
        for schedule_id, config in fresh.items():
            changed = self.schedules.get(schedule_id) != config
            self.schedules[schedule_id] = config
            if changed and aps is not None:
                self._set_job(aps, config)

    async def _fresh(self, schedule_id: str) -> ScheduleConfig | None:
        """A workspace schedule as stored now (None: removed); a configured one as it is."""
        if not schedule_id.startswith(CONFIG_PREFIX):
            return self.schedule(schedule_id)
        async with self.rt.db.transaction(readonly=True) as session:
            found = await workspace_schedules.get(session,
                                                  schedule_id.removeprefix(CONFIG_PREFIX))
        if found is None:
            self.schedules.pop(schedule_id, None)
            return None
        self.schedules[schedule_id] = config = config_of(found)
        return config

    def shutdown(self) -> None:
        if self.aps is not None and self.aps.running:
            self.aps.shutdown(wait=False)

    async def catch_up(self) -> list[tuple[str, str]]:
        """Record the slots missed while nothing ran; the (schedule, slot) pairs still to run."""
        now = self.clock()
        due = []
        for config in self.schedules.values():
            if not config.enabled:
                continue
            last = await self.last_cron_slot(config.id)
            plan = plan_catch_up(config.calendar, now=now, last=last, grace=config.grace)
            await self._record_missed(config, plan, "nothing was running at that time")
            if plan.run is not None:
                due.append((config.id, slot_key(plan.run)))
        return due

    async def last_cron_slot(self, schedule_id: str) -> datetime | None:
        """The latest cron slot claimed (manual runs have their own slots and do not count)."""
        async with self.rt.db.transaction(readonly=True) as session:
            found = await runs.list_runs(session, schedule_id=schedule_id, limit=RUN_SCAN)
        return next((when for r in found if (when := parse_slot(r.slot)) is not None), None)

    async def _record_missed(self, config: ScheduleConfig, plan: CatchUp, reason: str) -> None:
        now = self.clock()
        recorded = []
        async with self.rt.db.transaction() as session:
            for index, when in enumerate(plan.missed):
                slot = slot_key(when)
                if await runs.claim_slot(session, schedule_id=config.id, slot=slot, now=now):
                    detail = {"reason": reason, "older_missed": plan.older_missed and index == 0}
                    await runs.finish_slot(session, schedule_id=config.id, slot=slot,
                                           status=RunStatus.MISSED, detail=detail, now=now)
                    recorded.append(slot)
        if recorded:
            log.warning("schedule %s missed %d slot(s) (%s): %s; not run, the next digest "
                        "reports them", config.id, len(recorded), reason, ", ".join(recorded))

    def _on_missed(self, event: JobExecutionEvent) -> None:
        """APScheduler gave up on a run past its misfire grace: record it as missed."""
        config = self.schedules.get(event.job_id)
        if config is None:
            return
        log.warning("schedule %s: APScheduler missed %s", config.id, event.scheduled_run_time)
        plan = CatchUp(run=None, missed=(event.scheduled_run_time,))
        task = asyncio.get_running_loop().create_task(
            self._record_missed(config, plan, "it was due while the process was busy or paused"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- firing ---

    async def fire(self, schedule_id: str) -> RunReport | None:
        """The cron job: run the slot being fired, i.e. the calendar's latest fire time (of the
        schedule as stored now: an edit made elsewhere may have moved it)."""
        config = await self._fresh(schedule_id)
        if config is None:
            log.info("schedule %s was removed: nothing to fire", schedule_id)
            return None
        now = self.clock()
        when = config.calendar.latest_fire(now)
        if when is None:
            log.error("schedule %s fired but its cron has no past fire time", schedule_id)
            return None
        if config.id.startswith(CONFIG_PREFIX) and now - when > config.grace:
            # a job of its cron before an edit made elsewhere: the new cron has no slot due
            log.info("schedule %s: its cron changed; no slot of it is due now", schedule_id)
            return None
        return await self.run_slot(schedule_id, slot_key(when))

    async def run_slot(self, schedule_id: str, slot: str, *,
                       honour_pause: bool = True) -> RunReport:
        """Claim the slot and, if this caller won it and the schedule is not paused (and its
        workspace has the app installed), run it."""
        config = await self._fresh(schedule_id)
        if config is None:
            return RunReport(schedule_id, slot, REMOVED)
        now = self.clock()
        async with self.rt.db.transaction() as session:
            if not await runs.claim_slot(session, schedule_id=config.id, slot=slot, now=now):
                return RunReport(config.id, slot, ALREADY_CLAIMED)
            off = not config.enabled and config.id.startswith(CONFIG_PREFIX)   # theirs: paused
            paused = honour_pause and (off or await runs.is_paused(session, config.id))
            if paused:
                await runs.finish_slot(session, schedule_id=config.id, slot=slot,
                                       status=RunStatus.PAUSED,
                                       detail={"reason": "the schedule is paused"}, now=now)
        if paused:
            log.info("schedule %s is paused: slot %s skipped", config.id, slot)
            return RunReport(config.id, slot, RunStatus.PAUSED)
        publisher = self.digests.publisher
        reason = None if publisher is None else await publisher.unreachable(config.team)
        if reason is not None:
            log.warning("schedule %s: slot %s skipped: %s", config.id, slot, reason)
            await self._end_run(config.id, slot, RunStatus.SKIPPED, reason)
            return RunReport(config.id, slot, RunStatus.SKIPPED, error=reason)
        return await self._run_claimed(config, slot)

    async def _run_claimed(self, config: ScheduleConfig, slot: str) -> RunReport:
        log.info("schedule %s: running slot %s", config.id, slot)
        try:
            with slot_span(config.id, slot):  # its debates' traces start here
                return await self.digests.run(config, slot)
        except asyncio.CancelledError:
            await asyncio.shield(self._end_run(config.id, slot, RunStatus.INTERRUPTED,
                                               "the service stopped while the digest ran"))
            raise
        except Exception as exc:  # recorded in the run row, logged, and named in the next digest
            log.exception("schedule %s: slot %s failed", config.id, slot)
            error = f"{type(exc).__name__}: {exc}"
            await self._end_run(config.id, slot, RunStatus.FAILED, error)
            return RunReport(config.id, slot, RunStatus.FAILED, error=error)

    async def _end_run(self, schedule_id: str, slot: str, status: RunStatus,
                       reason: str) -> None:
        try:
            async with self.rt.db.transaction() as session:
                await runs.finish_slot(session, schedule_id=schedule_id, slot=slot,
                                       status=status, detail={"reason": reason},
                                       now=self.clock())
        except Exception:  # the run row stays "running"; the log says why
            log.exception("could not record %s@%s as %s", schedule_id, slot, status)

    # --- briefs ---

    def _add_brief_job(self, brief: Brief) -> None:
        if self.aps is None or not self.aps.running:
            return
        self.aps.add_job(self.briefs.run, "date",
                         run_date=max(brief.start_at, datetime.now(UTC)), args=[brief.id],
                         id=f"brief:{brief.id}", replace_existing=True, misfire_grace_time=None)

    async def sweep_briefs(self) -> None:
        """The interval job behind the date jobs: gives every due brief its own job, so briefs
        planned on another replica (or whose job was lost) still run, without waiting in line."""
        for brief in await self.briefs.pending(due=True):
            self._add_brief_job(brief)

    async def plan_brief(self, *, topic: str, at: datetime, channel: str,
                         requested_by: str) -> BriefPlan:
        """Plan a one-off `brief` debate that posts its brief in `channel` before `at`."""
        return await self.briefs.plan(topic=topic, at=at, channel=channel,
                                      requested_by=requested_by)

    # --- what the surfaces call ---

    async def views(self) -> list[ScheduleView]:
        """Every configured schedule with its next firing and whether it is paused."""
        now = self.clock()
        operator = [c for c in self.schedules.values() if not c.id.startswith(CONFIG_PREFIX)]
        async with self.rt.db.transaction(readonly=True) as session:
            paused = {c.id: await runs.is_paused(session, c.id) for c in operator}
        return [ScheduleView(id=c.id, cron=c.cron, timezone=c.timezone, channel=c.channel,
                             preset=c.preset, enabled=c.enabled, paused=paused[c.id],
                             next_fire=c.calendar.next_fire(now) if c.enabled else None)
                for c in operator]

    async def _set_paused(self, schedule_id: str, by: str, paused: bool) -> ScheduleView:
        if schedule_id.startswith(CONFIG_PREFIX):   # not the operator's reviewers' to pause
            raise InvalidRequest("that is a workspace's own schedule: its admins pause it from "
                                 "App Home (or the operator from the console)")
        self.schedule(schedule_id)  # InvalidRequest for an unknown id
        now = self.clock()
        async with self.rt.db.transaction() as session:
            await runs.set_paused(session, schedule_id, paused, by, now=now)
            await audit.append(session, debate_id=None, actor=by, at=now,
                               kind="schedule_paused" if paused else "schedule_resumed",
                               data={"schedule_id": schedule_id})
        log.info("schedule %s %s by %s", schedule_id, "paused" if paused else "resumed", by)
        return next(v for v in await self.views() if v.id == schedule_id)

    async def pause(self, schedule_id: str, by: str) -> ScheduleView:
        """Stop firing a schedule (on every replica) until resumed; audited. Callers check
        rights."""
        return await self._set_paused(schedule_id, by, True)

    async def resume(self, schedule_id: str, by: str) -> ScheduleView:
        """Fire a paused schedule again from its next slot; audited. Callers check rights."""
        return await self._set_paused(schedule_id, by, False)

    async def run_now(self, schedule_id: str) -> RunReport:
        """Fire a schedule at once under its own slot `manual:<now>` (even if paused or
        disabled) and wait for its digest."""
        return await self.run_slot(schedule_id, manual_slot(self.clock()), honour_pause=False)
