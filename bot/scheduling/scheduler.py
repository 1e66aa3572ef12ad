"""The scheduler: morning digests on cron slots and pre-meeting briefs, each run exactly once.

An APScheduler 3 `AsyncIOScheduler` (started in the server's cleanup_ctx, or by a worker-only
process) fires every enabled `[[schedules]]` entry. A firing computes its slot from the trigger,
then claims `(schedule_id, slot)` under the database's unique key: of several replicas firing
the same cron, only the winner runs it. On start, the latest slot missed while nothing ran is
run once when still within its grace; older missed slots are recorded as "missed" and named in
the next digest, never run.

A digest run reads its signals (config topics, or a file or URL read now), submits each as a
debate through the service (the budget downgrades or refuses; a refused signal is listed as
skipped with the reason), waits for the batch, then posts one message in the channel with the
details in its thread, and records the run. Briefs are planned (stored) ahead, start early
enough to finish before the meeting, and post a one-page brief in the meeting's channel.

Functions for other surfaces: `start_scheduler`, `list_schedules`, `pause`, `resume`,
`run_now`, `schedule_brief`; the CLI's `dialectic schedule list|run ID` (`add_cli`, `handle`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from pydantic import ValidationError
from rich.console import Console
from slack_sdk.errors import SlackApiError

from bot.http.api import transcript_url
from bot.scheduling.calendar import (  # add_cli, handle: the CLI's shape, light to import
    CatchUp,
    ScheduleConfig,
    Signal,
    add_cli,
    brief_start,
    handle,
    latest_fire,
    load_schedules,
    manual_slot,
    next_fire,
    parse_channel,
    parse_signals,
    parse_slot,
    plan_catch_up,
    slot_key,
)
from bot.service.runtime import Runtime
from bot.slack.views import digest as render
from bot.slack.views.common import Message
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded, DialecticError, InvalidRequest
from engine.presets import all_presets
from engine.settings import Settings
from storage import audit, debates
from storage import briefs as brief_store
from storage import schedules as runs
from storage.briefs import Brief
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Origin

log = logging.getLogger("dialectic.scheduler")

EXTRAS_KEY = "scheduler"
DONE, FAILED, MISSED, PAUSED, INTERRUPTED = "done", "failed", "missed", "paused", "interrupted"
ALREADY_CLAIMED = "already_claimed"
REPORTED_STATUSES = frozenset({MISSED, FAILED, INTERRUPTED})
SETTLED = TERMINAL_STATUSES | {DebateStatus.AWAITING_REVIEW}
SOURCE_TIMEOUT = 15.0
SOURCE_MAX_BYTES = 1_000_000
BRIEF_SWEEP_SECONDS = 60
BRIEF_POST_MARGIN = 60.0      # stop waiting this long before the meeting, to post in time
WAIT_MARGIN = 60.0
RUN_SCAN = 500                # scheduled_runs rows read to find the last cron slot
STALE_RUN = timedelta(hours=6)  # a run still "running" this long lost its process
POST_ERRORS = (SlackApiError, aiohttp.ClientError, TimeoutError)
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class RunReport:
    """How one firing ended: done, failed, paused, or already claimed by another replica."""

    schedule_id: str
    slot: str
    status: str
    debate_ids: tuple[str, ...] = ()
    message_ts: str | None = None
    digest: render.DigestReport | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """A schedule as `/debate schedules` and `dialectic schedule list` show it."""

    id: str
    cron: str
    timezone: str
    channel: str
    preset: str
    enabled: bool
    paused: bool
    next_fire: datetime | None


@dataclass(frozen=True, slots=True)
class BriefPlan:
    """A planned brief: the debate starts at `start_at` to post before `meeting_at`."""

    id: str
    topic: str
    channel: str
    requested_by: str
    meeting_at: datetime
    start_at: datetime
    status: str


class SignalSourceError(DialecticError):
    """A digest's signal source could not be read; the digest reports it."""


@dataclass(frozen=True, slots=True)
class _Submitted:
    title: str
    record: DebateRecord
    cached: bool
    downgraded_from: str | None


def configured_schedules(settings: Settings) -> tuple[ScheduleConfig, ...]:
    """The validated `[[schedules]]` of the settings (ConfigurationError naming each problem)."""
    return load_schedules(settings.schedules, default_timezone=settings.timezone,
                          presets=list(all_presets(settings)))


def _brief_plan(brief: Brief) -> BriefPlan:
    return BriefPlan(id=brief.id, topic=brief.topic, channel=brief.channel,
                     requested_by=brief.requested_by, meeting_at=brief.meeting_at,
                     start_at=brief.start_at, status=brief.status)


def _slot_words(slot: str) -> str:
    when = parse_slot(slot)
    return f"{when:%Y-%m-%d %H:%M} UTC" if when else slot


def _problem_line(run: runs.ScheduledRun) -> str:
    reason = run.detail.get("reason") or run.detail.get("error") or "no reason recorded"
    if run.status == MISSED:
        older = " (and earlier slots)" if run.detail.get("older_missed") else ""
        return f"missed the {_slot_words(run.slot)} run{older}: {reason}"
    if run.status == runs.RUNNING:
        return f"the {_slot_words(run.slot)} run never finished: the process running it stopped"
    return f"the {_slot_words(run.slot)} run {run.status}: {reason}"


def _read_text(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(SOURCE_MAX_BYTES + 1)
    if len(data) > SOURCE_MAX_BYTES:
        raise SignalSourceError(f"{path} is larger than {SOURCE_MAX_BYTES // 1000} kB")
    return data.decode("utf-8")


async def read_source(source: str) -> str:
    """The text of a signal source: an http(s) URL or a file path (relative to the cwd)."""
    if source.startswith(("http://", "https://")):
        return await _fetch(source)
    try:
        return await asyncio.to_thread(_read_text, Path(source).expanduser())
    except OSError as exc:
        raise SignalSourceError(f"cannot read {source}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{source} is not UTF-8 text ({exc.reason})") from exc


async def _fetch(url: str) -> str:
    timeout = aiohttp.ClientTimeout(total=SOURCE_TIMEOUT)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as reply:
            if reply.status >= 400:
                raise SignalSourceError(f"{url} answered HTTP {reply.status} {reply.reason}")
            data = await reply.content.read(SOURCE_MAX_BYTES + 1)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise SignalSourceError(f"cannot fetch {url}: {type(exc).__name__} {exc}") from exc
    if len(data) > SOURCE_MAX_BYTES:
        raise SignalSourceError(f"{url} sent more than {SOURCE_MAX_BYTES // 1000} kB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{url} did not send UTF-8 text ({exc.reason})") from exc


class Scheduler:
    """Fires the configured digests and the planned briefs, each once across every replica."""

    def __init__(self, rt: Runtime, *, schedules: tuple[ScheduleConfig, ...] | None = None,
                 clock: Clock | None = None, wait_timeout: float | None = None) -> None:
        self.rt = rt
        configs = configured_schedules(rt.settings) if schedules is None else schedules
        self.schedules = {config.id: config for config in configs}
        self.clock: Clock = clock or rt.service.clock
        self.wait_timeout = wait_timeout
        self.aps: AsyncIOScheduler | None = None
        self.recent: deque[RunReport] = deque(maxlen=100)
        self._background: set[asyncio.Task[Any]] = set()

    def schedule(self, schedule_id: str) -> ScheduleConfig:
        try:
            return self.schedules[schedule_id]
        except KeyError:
            known = ", ".join(sorted(self.schedules)) or "none configured"
            raise InvalidRequest(f"unknown schedule {schedule_id!r} (known: {known})") from None

    # --- lifecycle ---

    async def start(self) -> AsyncIOScheduler:
        """Catch up on missed slots, then start APScheduler with every enabled cron."""
        aps = AsyncIOScheduler(timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1})
        for config in self.schedules.values():
            if config.enabled:
                aps.add_job(self.fire, config.trigger(), args=[config.id], id=config.id,
                            name=f"digest {config.id}", coalesce=True, max_instances=1,
                            misfire_grace_time=max(config.misfire_grace_seconds, 1))
        for schedule_id, slot in await self.catch_up():
            aps.add_job(self.run_slot, "date", run_date=datetime.now(UTC),
                        args=[schedule_id, slot], id=f"catch-up:{schedule_id}",
                        misfire_grace_time=None)
        aps.add_job(self.sweep_briefs, "interval", seconds=BRIEF_SWEEP_SECONDS,
                    id="briefs:sweep", coalesce=True, max_instances=1)
        aps.add_listener(self._on_missed, EVENT_JOB_MISSED)
        self.aps = aps
        aps.start()
        for brief in await self._pending_briefs():
            self._add_brief_job(brief)
        log.info("scheduler started: %d schedule(s) enabled",
                 sum(c.enabled for c in self.schedules.values()))
        return aps

    async def catch_up(self) -> list[tuple[str, str]]:
        """Record the slots missed while nothing ran; the (schedule, slot) pairs still to run."""
        now = self.clock()
        due = []
        for config in self.schedules.values():
            if not config.enabled:
                continue
            last = await self.last_cron_slot(config.id)
            plan = plan_catch_up(config.trigger(), now=now, last=last, grace=config.grace)
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
                                           status=MISSED, detail=detail, now=now)
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
        """The cron job: run the slot being fired, i.e. the trigger's latest fire time."""
        config = self.schedule(schedule_id)
        when = latest_fire(config.trigger(), self.clock())
        if when is None:
            log.error("schedule %s fired but its cron has no past fire time", schedule_id)
            return None
        return await self.run_slot(schedule_id, slot_key(when))

    async def run_slot(self, schedule_id: str, slot: str, *,
                       honour_pause: bool = True) -> RunReport:
        """Claim the slot and, if this caller won it and the schedule is not paused, run it."""
        config = self.schedule(schedule_id)
        now = self.clock()
        async with self.rt.db.transaction() as session:
            if not await runs.claim_slot(session, schedule_id=config.id, slot=slot, now=now):
                return self._remember(RunReport(config.id, slot, ALREADY_CLAIMED))
            paused = honour_pause and await runs.is_paused(session, config.id)
            if paused:
                await runs.finish_slot(session, schedule_id=config.id, slot=slot, status=PAUSED,
                                       detail={"reason": "the schedule is paused"}, now=now)
        if paused:
            log.info("schedule %s is paused: slot %s skipped", config.id, slot)
            return self._remember(RunReport(config.id, slot, PAUSED))
        return self._remember(await self._run_claimed(config, slot))

    def _remember(self, report: RunReport) -> RunReport:
        self.recent.append(report)
        return report

    async def _run_claimed(self, config: ScheduleConfig, slot: str) -> RunReport:
        log.info("schedule %s: running slot %s", config.id, slot)
        try:
            return await self._digest(config, slot)
        except asyncio.CancelledError:
            await asyncio.shield(self._end_run(config.id, slot, INTERRUPTED,
                                               "the service stopped while the digest ran"))
            raise
        except Exception as exc:  # recorded in the run row, logged, and named in the next digest
            log.exception("schedule %s: slot %s failed", config.id, slot)
            error = f"{type(exc).__name__}: {exc}"
            await self._end_run(config.id, slot, FAILED, error)
            return RunReport(config.id, slot, FAILED, error=error)

    async def _end_run(self, schedule_id: str, slot: str, status: str, reason: str) -> None:
        try:
            async with self.rt.db.transaction() as session:
                await runs.finish_slot(session, schedule_id=schedule_id, slot=slot,
                                       status=status, detail={"reason": reason},
                                       now=self.clock())
        except Exception:  # the run row stays "running"; the log says why
            log.exception("could not record %s@%s as %s", schedule_id, slot, status)

    # --- a digest ---

    async def _digest(self, config: ScheduleConfig, slot: str) -> RunReport:
        signals, problems = await self.read_signals(config)
        earlier = await self._unreported(config.id)
        outcomes = await self._debate(config, slot, signals)
        report = render.DigestReport(
            schedule_id=config.id, slot=slot, when=parse_slot(slot) or self.clock(),
            outcomes=tuple(outcomes), source_problems=tuple(problems),
            earlier_problems=tuple(_problem_line(r) for r in earlier),
            rehearsal=self.rt.settings.is_rehearsal)
        message = render.digest_message(report)
        ts, post_error = await self._publish(config, report, message)
        ids = tuple(o.debate_id for o in outcomes if o.debate_id)
        await self._finish_digest(config, report, message, ts, post_error, earlier)
        status = DONE if post_error is None else FAILED
        return RunReport(config.id, slot, status, debate_ids=ids, message_ts=ts, digest=report,
                         error=post_error or "")

    async def read_signals(self, config: ScheduleConfig) -> tuple[list[Signal], list[str]]:
        """The schedule's signals now, and the problems reading them (reported, not hidden)."""
        if config.topics:
            return [Signal(title=topic) for topic in config.topics], []
        assert config.source is not None  # the config model requires topics or a source
        try:
            text = await read_source(config.source)
        except SignalSourceError as exc:
            log.warning("schedule %s: signal source failed: %s", config.id, exc)
            return [], [str(exc)]
        signals, problems = parse_signals(text, origin=config.source)
        if not signals and not problems:
            problems.append(f"{config.source} has no signals")
        return signals, problems

    async def _debate(self, config: ScheduleConfig, slot: str,
                      signals: list[Signal]) -> list[render.SignalOutcome]:
        """Submit every signal at once (the service reserves budget for each), then wait."""
        taken, extra = signals[:config.max_signals], signals[config.max_signals:]
        submitted = await asyncio.gather(
            *(self._submit(config, slot, index, s) for index, s in enumerate(taken)))
        if any(isinstance(s, _Submitted) for s in submitted):
            self.rt.notify_workers()
        ids = [s.record.id for s in submitted if isinstance(s, _Submitted)]
        records = await self._wait_for(ids, self._batch_timeout(len(ids)))
        outcomes = [self._outcome(s, records) for s in submitted]
        reason = f"over this schedule's max_signals ({config.max_signals})"
        return outcomes + [render.SignalOutcome(s.title, reason=reason) for s in extra]

    def _outcome(self, item: _Submitted | render.SignalOutcome,
                 records: dict[str, DebateRecord]) -> render.SignalOutcome:
        if not isinstance(item, _Submitted):
            return item
        return render.outcome_for(item.title, records[item.record.id],
                                  url=transcript_url(self.rt, item.record.id),
                                  cached=item.cached, downgraded_from=item.downgraded_from)

    async def _submit(self, config: ScheduleConfig, slot: str, index: int,
                      signal: Signal) -> _Submitted | render.SignalOutcome:
        fields: dict[str, Any] = {"topic": signal.title, "context": signal.context,
                                  "preset": config.preset,
                                  "requested_by": f"schedule:{config.id}"}
        if config.mode is not None:
            fields["mode"] = config.mode
        origin = Origin(surface="schedule", schedule_id=config.id, channel_id=config.channel)
        try:
            request = DebateRequest.model_validate(fields)
            sub = await self.rt.service.submit(
                request, origin=origin, idempotency_key=f"schedule:{config.id}:{slot}:{index}")
        except BudgetExceeded as exc:
            return render.SignalOutcome(signal.title, status=render.SKIPPED, reason=str(exc))
        except (InvalidRequest, ValidationError) as exc:
            return render.SignalOutcome(signal.title, status=render.REJECTED, reason=str(exc))
        return _Submitted(signal.title, sub.record, sub.cached, sub.downgraded_from)

    def _batch_timeout(self, count: int) -> float:
        """How long a batch may take: rounds of debates over the worker slots, plus a margin."""
        if self.wait_timeout is not None:
            return self.wait_timeout
        slots = self.rt.worker_slots() or self.rt.settings.worker_concurrency
        rounds = max(1, math.ceil(count / max(slots, 1)))
        return rounds * self.rt.settings.debate_timeout + WAIT_MARGIN

    async def _wait_for(self, ids: list[str], timeout: float) -> dict[str, DebateRecord]:
        """The debates' records once all are settled, or as they are when `timeout` runs out.

        Polls the database, so it sees debates finished by workers in other processes too."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            async with self.rt.db.transaction(readonly=True) as session:
                records = {i: await debates.get(session, i) for i in ids}
            waiting = [r for r in records.values() if r.status not in SETTLED]
            left = deadline - loop.time()
            if not waiting or left <= 0:
                return records
            await asyncio.sleep(min(self.rt.settings.poll_interval, left))

    async def _unreported(self, schedule_id: str) -> list[runs.ScheduledRun]:
        """Missed, failed, interrupted or stale runs no digest has mentioned yet, oldest first."""
        now = self.clock()
        async with self.rt.db.transaction(readonly=True) as session:
            found = await runs.list_runs(session, schedule_id=schedule_id, limit=RUN_SCAN)

        def reportable(run: runs.ScheduledRun) -> bool:
            stale = run.status == runs.RUNNING and now - run.created_at > STALE_RUN
            return not run.detail.get("reported_in") and (run.status in REPORTED_STATUSES
                                                          or stale)

        return [r for r in found if reportable(r)][::-1]

    async def _publish(self, config: ScheduleConfig, report: render.DigestReport,
                       message: Message) -> tuple[str | None, str | None]:
        """Post the digest and its thread; (ts, None), or (None, why it is not in Slack)."""
        if self.rt.slack is None:
            lines = [f"  {o.status}: {o.title} ({o.reason or o.debate_id})"
                     for o in report.outcomes]
            log.info("digest %s@%s (Slack is off; kept in the database):\n%s\n%s", config.id,
                     report.slot, message.text, "\n".join(lines))
            return None, None
        ts = await self._post(config.channel, message, what=f"digest {config.id}")
        if ts is None:
            return None, f"the digest could not be posted to {config.channel}"
        for reply in render.digest_details(report):
            await self._post(config.channel, reply, thread_ts=ts, what="digest detail")
        return ts, None

    async def _post(self, channel: str, message: Message, *, thread_ts: str | None = None,
                    what: str) -> str | None:
        assert self.rt.slack is not None
        try:
            return await self.rt.slack.post(channel, message, thread_ts=thread_ts)
        except POST_ERRORS as exc:
            log.warning("could not post %s to %s: %s", what, channel, exc)
            return None

    async def _finish_digest(self, config: ScheduleConfig, report: render.DigestReport,
                             message: Message, ts: str | None, post_error: str | None,
                             earlier: list[runs.ScheduledRun]) -> None:
        signals = [{"title": o.title, "status": o.status, "debate_id": o.debate_id,
                    "focus": o.focus, "reason": o.reason, "cost_usd": o.cost_usd}
                   for o in report.outcomes]
        detail = {"channel": config.channel, "message_ts": ts, "posted": ts is not None,
                  "error": post_error, "cost_usd": report.total_cost, "signals": signals,
                  "source_problems": list(report.source_problems),
                  "earlier_problems": list(report.earlier_problems),
                  "message": {"text": message.text, "blocks": message.blocks}}
        ids = [o.debate_id for o in report.outcomes if o.debate_id]
        now = self.clock()
        async with self.rt.db.transaction() as session:
            await runs.finish_slot(session, schedule_id=config.id, slot=report.slot,
                                   status=DONE if post_error is None else FAILED,
                                   debate_ids=ids, detail=detail, now=now)
            for run in earlier if post_error is None else []:  # reported once they are seen
                await runs.finish_slot(session, schedule_id=config.id, slot=run.slot,
                                       status=INTERRUPTED if run.status == runs.RUNNING
                                       else run.status, debate_ids=run.debate_ids,
                                       detail={**run.detail, "reported_in": report.slot},
                                       now=run.finished_at or now)

    # --- briefs ---

    async def plan_brief(self, *, topic: str, at: datetime, channel: str,
                         requested_by: str) -> BriefPlan:
        """Store a brief to run before `at` and schedule it here (InvalidRequest if it cannot)."""
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
        estimate = await self.rt.service.estimate(request)  # InvalidRequest for a bad topic
        start = brief_start(at, now=now, depth=estimate.depth,
                            call_timeout=self.rt.settings.call_timeout)
        brief = Brief(id=uuid.uuid4().hex[:16], topic=topic.strip(), channel=channel,
                      requested_by=requested_by, meeting_at=at.astimezone(UTC),
                      start_at=start.astimezone(UTC))
        async with self.rt.db.transaction() as session:
            brief = await brief_store.create(session, brief=brief, now=now)
            await audit.append(session, debate_id=None, kind="brief_planned", actor=requested_by,
                               data={"brief_id": brief.id, "topic": brief.topic,
                                     "channel": channel, "meeting_at": brief.meeting_at,
                                     "start_at": brief.start_at}, at=now)
        self._add_brief_job(brief)
        return _brief_plan(brief)

    def _add_brief_job(self, brief: Brief) -> None:
        if self.aps is None or not self.aps.running:
            return
        self.aps.add_job(self.run_brief, "date", run_date=max(brief.start_at, datetime.now(UTC)),
                         args=[brief.id], id=f"brief:{brief.id}", replace_existing=True,
                         misfire_grace_time=None)

    async def _pending_briefs(self) -> list[Brief]:
        async with self.rt.db.transaction(readonly=True) as session:
            return await brief_store.list_pending(session)

    async def _due_briefs(self) -> list[Brief]:
        async with self.rt.db.transaction(readonly=True) as session:
            return await brief_store.list_pending(session, due_by=self.clock())

    async def sweep_briefs(self) -> None:
        """The interval job behind the date jobs: gives every due brief its own job, so briefs
        planned on another replica (or whose job was lost) still run, without waiting in line."""
        for brief in await self._due_briefs():
            self._add_brief_job(brief)

    async def run_due_briefs(self) -> list[str]:
        """Run every pending brief whose start time has come, here and now; the ids it ran."""
        due = await self._due_briefs()
        ran = await asyncio.gather(*(self.run_brief(b.id) for b in due))
        return [brief.id for brief, done in zip(due, ran, strict=True) if done]

    async def run_brief(self, brief_id: str) -> bool:
        """Claim the brief's slot and run it; False when it is not pending or another won it."""
        now = self.clock()
        async with self.rt.db.transaction() as session:
            brief = await brief_store.get(session, brief_id)
            if brief.status != brief_store.PENDING:
                return False
            slot = f"brief:{brief.id}"
            if not await runs.claim_slot(session, schedule_id=slot, slot=slot, now=now):
                return False
            await brief_store.start(session, brief.id, now=now)
        try:
            await self._brief(brief)
        except asyncio.CancelledError:
            await asyncio.shield(self._end_brief(brief, brief_store.FAILED, None, None,
                                                 {"reason": "the service stopped"}))
            raise
        except Exception as exc:  # recorded on the brief, logged
            log.exception("brief %s failed", brief.id)
            await self._end_brief(brief, brief_store.FAILED, None, None,
                                  {"reason": f"{type(exc).__name__}: {exc}"})
        return True

    async def _brief(self, brief: Brief) -> None:
        if self.clock() >= brief.meeting_at:
            await self._brief_missed(brief, "the meeting had started before it could run")
            return
        request = DebateRequest(topic=brief.topic, preset="brief",
                                requested_by=brief.requested_by)
        origin = Origin(surface="schedule", schedule_id=f"brief:{brief.id}",
                        channel_id=brief.channel)
        try:
            sub = await self.rt.service.submit(request, origin=origin,
                                               idempotency_key=f"brief:{brief.id}")
        except (BudgetExceeded, InvalidRequest) as exc:
            await self._brief_missed(brief, str(exc))
            return
        self.rt.notify_workers()
        left = (brief.meeting_at - self.clock()).total_seconds() - BRIEF_POST_MARGIN
        record = (await self._wait_for([sub.record.id], max(left, 1.0)))[sub.record.id]
        url = transcript_url(self.rt, record.id)
        message = render.brief_message(brief.topic, meeting_at=brief.meeting_at,
                                       result=record.result, status=record.status, url=url,
                                       rehearsal=self.rt.settings.is_rehearsal)
        ts = await self._deliver(brief.channel, message, what=f"brief {brief.id}")
        status = brief_store.POSTED if ts else brief_store.READY
        await self._end_brief(brief, status, record.id, ts, {
            "debate_status": record.status.value, "posted_at": self.clock(),
            "message": {"text": message.text, "blocks": message.blocks}})

    async def _deliver(self, channel: str, message: Message, *, what: str) -> str | None:
        if self.rt.slack is None:
            log.info("%s (Slack is off; kept in the database): %s", what, message.text)
            return None
        return await self._post(channel, message, what=what)

    async def _brief_missed(self, brief: Brief, reason: str) -> None:
        log.warning("brief %s not prepared: %s", brief.id, reason)
        notice = render.brief_missed(brief.topic, meeting_at=brief.meeting_at, reason=reason)
        ts = await self._deliver(brief.channel, notice, what=f"brief {brief.id} notice")
        await self._end_brief(brief, brief_store.MISSED, None, ts, {"reason": reason})

    async def _end_brief(self, brief: Brief, status: str, debate_id: str | None,
                         ts: str | None, detail: dict[str, Any]) -> None:
        slot = f"brief:{brief.id}"
        now = self.clock()
        async with self.rt.db.transaction() as session:
            await brief_store.finish(session, brief.id, status=status, debate_id=debate_id,
                                     message_ts=ts, detail=detail, now=now)
            await runs.finish_slot(session, schedule_id=slot, slot=slot,
                                   status=DONE if status == brief_store.POSTED else status,
                                   debate_ids=[debate_id] if debate_id else [],
                                   detail={"brief_status": status}, now=now)


# --------------------------------------------------------------------------------------------
# what other surfaces call


def get_scheduler(rt: Runtime) -> Scheduler:
    """The process's scheduler (started or not) for this runtime."""
    found = rt.extras.get(EXTRAS_KEY)
    if not isinstance(found, Scheduler):
        found = Scheduler(rt)
        rt.extras[EXTRAS_KEY] = found
    return found


async def start_scheduler(rt: Runtime, *, clock: Clock | None = None,
                          schedules: tuple[ScheduleConfig, ...] | None = None
                          ) -> AsyncIOScheduler | None:
    """Validate the schedules, catch up, and start APScheduler; the caller shuts it down."""
    scheduler = Scheduler(rt, schedules=schedules, clock=clock)
    rt.extras[EXTRAS_KEY] = scheduler
    return await scheduler.start()


async def list_schedules(rt: Runtime) -> list[ScheduleView]:
    """Every configured schedule with its next firing and whether it is paused."""
    scheduler = get_scheduler(rt)
    now = scheduler.clock()
    async with rt.db.transaction(readonly=True) as session:
        paused = {i: await runs.is_paused(session, i) for i in scheduler.schedules}
    return [ScheduleView(id=c.id, cron=c.cron, timezone=c.timezone, channel=c.channel,
                         preset=c.preset, enabled=c.enabled, paused=paused[c.id],
                         next_fire=next_fire(c.trigger(), now) if c.enabled else None)
            for c in scheduler.schedules.values()]


async def _set_paused(rt: Runtime, schedule_id: str, by: str, paused: bool) -> ScheduleView:
    scheduler = get_scheduler(rt)
    scheduler.schedule(schedule_id)  # InvalidRequest for an unknown id
    now = scheduler.clock()
    async with rt.db.transaction() as session:
        await runs.set_paused(session, schedule_id, paused, by, now=now)
        await audit.append(session, debate_id=None, actor=by, at=now,
                           kind="schedule_paused" if paused else "schedule_resumed",
                           data={"schedule_id": schedule_id})
    log.info("schedule %s %s by %s", schedule_id, "paused" if paused else "resumed", by)
    return next(v for v in await list_schedules(rt) if v.id == schedule_id)


async def pause(rt: Runtime, schedule_id: str, by: str) -> ScheduleView:
    """Stop firing a schedule (on every replica) until resumed; audited. Callers check rights."""
    return await _set_paused(rt, schedule_id, by, True)


async def resume(rt: Runtime, schedule_id: str, by: str) -> ScheduleView:
    """Fire a paused schedule again from its next slot; audited. Callers check rights."""
    return await _set_paused(rt, schedule_id, by, False)


async def run_now(rt: Runtime, schedule_id: str) -> RunReport:
    """Fire a schedule at once under its own slot `manual:<now>` (even if paused or disabled)
    and wait for its digest."""
    scheduler = get_scheduler(rt)
    slot = manual_slot(scheduler.clock())
    return await scheduler.run_slot(schedule_id, slot, honour_pause=False)


async def schedule_brief(rt: Runtime, *, topic: str, at: datetime, channel: str,
                         requested_by: str) -> BriefPlan:
    """Plan a one-off `brief` debate that posts its brief in `channel` before `at`."""
    return await get_scheduler(rt).plan_brief(topic=topic, at=at, channel=channel,
                                              requested_by=requested_by)


# --------------------------------------------------------------------------------------------
# command line: dialectic schedule list | run ID


def run_cli(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    """`dialectic schedule list|run ID` (parsed by `bot.schedules.add_cli`)."""
    return asyncio.run(_cli(settings, args, console))


async def _cli(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    from bot.service.logs import setup_logging
    from bot.service.runtime import build_runtime

    setup_logging(settings.log_level, settings.secrets())
    configured_schedules(settings)  # fail on a bad configuration before touching anything
    rt = await build_runtime(settings)
    try:
        if args.schedule_action == "list":
            _print_views(console, await list_schedules(rt))
            return 0
        return await _cli_run(rt, args.schedule_id, console, worker=not args.no_worker)
    finally:
        await rt.close()


def _print_views(console: Console, views: list[ScheduleView]) -> None:
    if not views:
        console.print("no schedules configured ([[schedules]] in dialectic.toml)")
    for v in views:
        state = "disabled" if not v.enabled else "paused" if v.paused else "active"
        when = v.next_fire.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if v.next_fire else "-"
        console.print(f"{v.id}  {v.cron} ({v.timezone})  {state}  next {when}  -> {v.channel} "
                      f"[{v.preset}]", markup=False)


async def _cli_run(rt: Runtime, schedule_id: str, console: Console, *, worker: bool) -> int:
    from bot.service.worker import Worker

    _attach_slack(rt)
    stop = asyncio.Event()
    task = None
    if worker:
        rt.workers.append(Worker(rt.service))
        task = asyncio.create_task(rt.workers[-1].run(stop))
    try:
        report = await run_now(rt, schedule_id)
    finally:
        stop.set()
        if task is not None:
            await task
        await _close_slack(rt)
    console.print(f"{report.schedule_id} {report.slot}: {report.status}, "
                  f"{len(report.debate_ids)} debate(s)" +
                  (f", posted ts {report.message_ts}" if report.message_ts else "") +
                  (f" — {report.error}" if report.error else ""), markup=False)
    return 0 if report.status == DONE else 1


async def _close_slack(rt: Runtime) -> None:
    """Let the notifier's queued posts go out before the command exits."""
    notifier: Any = rt.slack
    if notifier is None or not hasattr(notifier, "drain"):
        return
    try:
        await asyncio.wait_for(notifier.drain(), WAIT_MARGIN)
    except TimeoutError:
        log.warning("gave up waiting for queued Slack posts")
    await notifier.close()


def _attach_slack(rt: Runtime) -> None:
    """Post through the Slack notifier (a SlackPoster) when Slack is configured."""
    if not rt.settings.slack_enabled or rt.slack is not None:
        return
    from bot.slack import attach_notifier

    rt.slack = attach_notifier(rt)


__all__ = [
    "BriefPlan",
    "RunReport",
    "ScheduleView",
    "Scheduler",
    "SignalSourceError",
    "add_cli",
    "configured_schedules",
    "get_scheduler",
    "handle",
    "list_schedules",
    "pause",
    "read_source",
    "resume",
    "run_cli",
    "run_now",
    "schedule_brief",
    "start_scheduler",
]
