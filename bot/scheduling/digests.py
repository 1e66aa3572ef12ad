"""One digest run: read the schedule's signals, debate them as a batch, publish one digest.

Every signal is submitted at once through the service (the budget downgrades or refuses each; a
refused signal is listed as skipped with the reason), the batch is awaited (polling the database,
so debates finished by workers of other processes count), then the publisher posts one message
with the details in its thread, and the run is recorded with what was posted. Runs missed,
failed or interrupted earlier are named in this digest, then marked as reported.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from bot.scheduling.calendar import Clock, parse_slot
from bot.scheduling.config import ScheduleConfig
from bot.scheduling.publishing import Posted, Publisher
from bot.scheduling.reports import (
    DigestReport,
    NotDebated,
    RunReport,
    SignalOutcome,
    outcome_for,
)
from bot.scheduling.signals import Signal, SignalSourceError, parse_signals, read_source
from bot.service.runtime import Runtime
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded, InvalidRequest
from engine.provider.redaction import public_url
from storage import debates
from storage import schedules as runs
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Origin, RunStatus

log = logging.getLogger("dialectic.scheduler")

SETTLED = TERMINAL_STATUSES | {DebateStatus.AWAITING_REVIEW}
REPORTED_STATUSES = frozenset({RunStatus.MISSED, RunStatus.FAILED, RunStatus.INTERRUPTED,
                               RunStatus.SKIPPED})
WAIT_MARGIN = 60.0
RUN_SCAN = 500                  # scheduled_runs rows read to find earlier problems
STALE_RUN = timedelta(hours=6)  # a run still "running" this long lost its process


@dataclass(frozen=True, slots=True)
class _Submitted:
    title: str
    record: DebateRecord
    cached: bool
    downgraded_from: str | None


def slot_words(slot: str) -> str:
    when = parse_slot(slot)
    return f"{when:%Y-%m-%d %H:%M} UTC" if when else slot


def problem_line(run: runs.ScheduledRun) -> str:
    reason = run.detail.get("reason") or run.detail.get("error") or "no reason recorded"
    if run.status is RunStatus.MISSED:
        older = " (and earlier slots)" if run.detail.get("older_missed") else ""
        return f"missed the {slot_words(run.slot)} run{older}: {reason}"
    if run.status is RunStatus.RUNNING:
        return f"the {slot_words(run.slot)} run never finished: the process running it stopped"
    return f"the {slot_words(run.slot)} run {run.status}: {reason}"


class Digests:
    """Runs claimed digest slots for the scheduler."""

    def __init__(self, rt: Runtime, *, publisher: Publisher | None, clock: Clock,
                 wait_timeout: float | None = None, allow_private_sources: bool = False) -> None:
        self.rt = rt
        self.publisher = publisher
        self.clock = clock
        self.wait_timeout = wait_timeout
        self.allow_private_sources = allow_private_sources

    async def run(self, config: ScheduleConfig, slot: str) -> RunReport:
        signals, problems = await self.read_signals(config)
        earlier = await self._unreported(config.id)
        outcomes = await self._debate(config, slot, signals)
        report = DigestReport(
            schedule_id=config.id, slot=slot, when=parse_slot(slot) or self.clock(),
            outcomes=tuple(outcomes), source_problems=tuple(problems),
            earlier_problems=tuple(problem_line(r) for r in earlier),
            rehearsal=self.rt.is_rehearsal)
        posted = await self._publish(config, report)
        ids = tuple(o.debate_id for o in outcomes if o.debate_id)
        await self._finish(config, report, posted, earlier)
        status = RunStatus.DONE if posted.error is None else RunStatus.FAILED
        return RunReport(config.id, slot, status, debate_ids=ids, message_ts=posted.ts,
                         digest=report, error=posted.error or "")

    async def read_signals(self, config: ScheduleConfig) -> tuple[list[Signal], list[str]]:
        """The schedule's signals now, and the problems reading them (reported, not hidden)."""
        if config.topics:
            return [Signal(title=topic) for topic in config.topics], []
        assert config.source is not None  # the config model requires topics or a source
        try:
            text = await read_source(config.source, allow_private=self.allow_private_sources)
        except SignalSourceError as exc:
            log.warning("schedule %s: signal source failed: %s", config.id, exc)
            return [], [str(exc)]
        label = public_url(config.source)
        signals, problems = parse_signals(text, origin=label)
        if not signals and not problems:
            problems.append(f"{label} has no signals")
        return signals, problems

    async def _debate(self, config: ScheduleConfig, slot: str,
                      signals: list[Signal]) -> list[SignalOutcome]:
        """Submit every signal at once (the service reserves budget for each), then wait."""
        taken, extra = signals[:config.max_signals], signals[config.max_signals:]
        submitted = await asyncio.gather(
            *(self._submit(config, slot, index, s) for index, s in enumerate(taken)))
        if any(isinstance(s, _Submitted) for s in submitted):
            self.rt.notify_workers()
        ids = [s.record.id for s in submitted if isinstance(s, _Submitted)]
        records = await self.wait_for(ids, self._batch_timeout(len(ids)))
        outcomes = [self._outcome(s, records) for s in submitted]
        reason = f"over this schedule's max_signals ({config.max_signals})"
        return outcomes + [SignalOutcome(s.title, reason=reason) for s in extra]

    def _outcome(self, item: _Submitted | SignalOutcome,
                 records: dict[str, DebateRecord]) -> SignalOutcome:
        if not isinstance(item, _Submitted):
            return item
        return outcome_for(item.title, records[item.record.id], url=self.rt.url(item.record.id),
                           cached=item.cached, downgraded_from=item.downgraded_from)

    async def _submit(self, config: ScheduleConfig, slot: str, index: int,
                      signal: Signal) -> _Submitted | SignalOutcome:
        fields: dict[str, Any] = {"topic": signal.title, "context": signal.context,
                                  "preset": config.preset,
                                  "requested_by": f"schedule:{config.id}"}
        if config.mode is not None:
            fields["mode"] = config.mode
        origin = Origin(surface="schedule", schedule_id=config.id, channel_id=config.channel,
                        team_id=config.team)
        try:
            request = DebateRequest.model_validate(fields)
            sub = await self.rt.service.submit(
                request, origin=origin, idempotency_key=f"schedule:{config.id}:{slot}:{index}")
        except BudgetExceeded as exc:
            return SignalOutcome(signal.title, status=NotDebated.SKIPPED, reason=str(exc))
        except (InvalidRequest, ValidationError) as exc:
            return SignalOutcome(signal.title, status=NotDebated.REJECTED, reason=str(exc))
        return _Submitted(signal.title, sub.record, sub.cached, sub.downgraded_from)

    def _batch_timeout(self, count: int) -> float:
        """How long a batch may take: rounds of debates over the worker slots, plus a margin."""
        if self.wait_timeout is not None:
            return self.wait_timeout
        slots = self.rt.worker_slots() or self.rt.settings.worker_concurrency
        rounds = max(1, math.ceil(count / max(slots, 1)))
        return rounds * self.rt.engine.debate_timeout + WAIT_MARGIN

    async def wait_for(self, ids: list[str], timeout: float) -> dict[str, DebateRecord]:
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
            stale = run.status is RunStatus.RUNNING and now - run.created_at > STALE_RUN
            return not run.detail.get("reported_in") and (run.status in REPORTED_STATUSES
                                                          or stale)

        return [r for r in found if reportable(r)][::-1]

    async def _publish(self, config: ScheduleConfig, report: DigestReport) -> Posted:
        """Post the digest and its thread through the publisher; with Slack off, log it."""
        if self.publisher is None:
            lines = [f"  {o.status}: {o.title} ({o.reason or o.debate_id})"
                     for o in report.outcomes]
            log.info("digest %s@%s (Slack is off; kept in the database):\n%s", config.id,
                     report.slot, "\n".join(lines))
            return Posted(ts=None)
        return await self.publisher.digest(config.channel, report, team=config.team)

    async def _finish(self, config: ScheduleConfig, report: DigestReport, posted: Posted,
                      earlier: list[runs.ScheduledRun]) -> None:
        signals = [{"title": o.title, "status": o.status, "debate_id": o.debate_id,
                    "focus": o.focus, "reason": o.reason, "cost_usd": o.cost_usd}
                   for o in report.outcomes]
        detail = {"channel": config.channel, "message_ts": posted.ts,
                  "posted": posted.ts is not None, "error": posted.error,
                  "cost_usd": report.total_cost, "signals": signals,
                  "source_problems": list(report.source_problems),
                  "earlier_problems": list(report.earlier_problems),
                  "message": posted.message}
        ids = [o.debate_id for o in report.outcomes if o.debate_id]
        now = self.clock()
        status = RunStatus.DONE if posted.error is None else RunStatus.FAILED
        async with self.rt.db.transaction() as session:
            await runs.finish_slot(session, schedule_id=config.id, slot=report.slot,
                                   status=status, debate_ids=ids, detail=detail, now=now)
            for run in earlier if posted.error is None else []:  # reported once they are seen
                await runs.finish_slot(session, schedule_id=config.id, slot=run.slot,
                                       status=RunStatus.INTERRUPTED
                                       if run.status is RunStatus.RUNNING else run.status,
                                       debate_ids=run.debate_ids,
                                       detail={**run.detail, "reported_in": report.slot},
                                       now=run.finished_at or now)
