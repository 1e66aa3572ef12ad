"""The service: the one place a debate is submitted, run, settled, routed and decided.

Every surface (Slack, REST, CLI, scheduler) calls these functions; they own the transactions.
Submitting estimates the cost from the protocol's plan, reserves it against today's budget and
queues the debate in one transaction (downgrading the mode when the preset allows, refusing with
the figures otherwise). Running goes through the durable checkpoint store, so a reclaimed debate
resumes where it stopped. Finishing settles the real cost and routes the result.

Untrusted text is screened where it enters: the request at submit, evidence as it arrives, the
models' outputs when the result comes back (engine.untrusted.material). Whatever addresses the AI
flags the debate (stored on its record, audited as `injection_flagged`), and a flagged debate goes
to a human whatever its alpha.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.service import admission, alerts, links, readmission, replays, reuse
from bot.service.answers import AnswerBook, LearningClient
from bot.service.calibration import Calibration
from bot.service.debate_hooks import FinishedHook, JudgingSink, run_finished_hooks
from bot.service.delivery import obligations
from bot.service.oversight import Oversight, spot_check_reason
from bot.service.purse import DbPurse
from bot.service.results import review_reason, routed_by, to_reviewers
from bot.service.reuse import answered_by, cache_key, replay_source
from bot.service.settings import ServiceSettings
from bot.service.step_writes import DbStepWrites
from bot.service.submission import Submission as Submission
from bot.service.traces import traced_origin
from bot.service.tracing import tracing
from engine.core.debate import Prepared, estimate_for, prepare, run_debate
from engine.core.prompts import PROMPT_VERSION
from engine.core.replay import ReplayStore
from engine.domain import DebateRequest, DebateResult, Estimate, Evidence, utcnow
from engine.errors import InvalidRequest
from engine.money.sizing import SizeBook
from engine.ports import CheckpointStore, EventSink, FanOutSink
from engine.provider.llm import LLMClient
from engine.settings import EngineSettings
from engine.untrusted.injection import Finding
from engine.untrusted.material import new_nonce, of_evidence, of_request, screen, with_nonce
from engine.vocabulary import Mode, ResultStatus, Routing
from storage import (
    audit,
    budget,
    caches,
    debates,
    evidence,
    panels,
    queue,
    reviews,
)
from storage.db import Database
from storage.errors import AlreadyExists, KeyReused
from storage.lifecycle import CANCELLED_PREFIX
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Origin, Review
from storage.steps import DbCheckpointStore

log = logging.getLogger("dialectic.service")
_FINISHED = TERMINAL_STATUSES | {DebateStatus.AWAITING_REVIEW}

ROUTED = frozenset({"human_review", "escalate"})

SinkFactory = Callable[[DebateRecord], EventSink | None]


@dataclass(frozen=True, slots=True)
class EvidenceAdded:
    """Whether evidence was recorded (truthy when it was), and what in it addresses the AI."""

    added: bool
    findings: tuple[Finding, ...] = ()

    def __bool__(self) -> bool:
        return self.added


def budget_day(now: datetime) -> date:
    return now.date()


@dataclass
class DebateService:
    engine: EngineSettings
    settings: ServiceSettings
    db: Database
    llm_factory: Callable[[EngineSettings], LLMClient]
    clock: Callable[[], datetime] = utcnow
    sink_factories: list[SinkFactory] = field(default_factory=list)
    finished_hooks: list[FinishedHook] = field(default_factory=list)
    submitted_hooks: list[Callable[[DebateRecord], None]] = field(default_factory=list)
    #: where finished debates' results are delivered through the outbox ({"slack"} when Slack is
    #: configured: set by the composition root, so every process writes what a debate owes)
    outbox_targets: frozenset[str] = frozenset()
    _llm: LLMClient | None = field(default=None, init=False, repr=False)
    history: Calibration = field(init=False, repr=False)
    answers: AnswerBook = field(init=False, repr=False)
    oversight: Oversight = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.history = Calibration(self.engine, self.db, clock=lambda: self.clock())
        self.answers = AnswerBook(self.engine, self.db, clock=lambda: self.clock())
        self.oversight = Oversight(self.engine, self.db,
                                   spot_check_fraction=self.settings.spot_check_fraction,
                                   window_days=self.settings.audit_window_days,
                                   clock=lambda: self.clock())

    def llm(self) -> LLMClient:
        """One client for every debate of the process: its connection pool (and TLS context)
        is built once, not per debate."""
        if self._llm is None:  # each reply tells which model answers (prices follow it)
            self._llm = LearningClient(self.llm_factory(self.engine), self.answers)
        return self._llm

    def url(self, debate_id: str) -> str:
        """The debate's transcript page (signed when the service is token-protected)."""
        return links.transcript_url(self.settings, debate_id, now=self.clock())

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None

    # --- submitting ---
    async def estimate(self, request: DebateRequest, *, team_id: str | None = None,
                       prepared: Prepared | None = None) -> Estimate:
        """The estimate, saying whether submitting would admit the debate now (the same rule:
        bot/service/admission.py); `team_id`: as a debate of that workspace; `prepared`: the
        request's `prepare()` (which refuses bad input with InvalidRequest), when made already."""
        prepared = prepare(self.engine, request) if prepared is None else prepared
        day = await readmission.today(self.db, budget_day(self.clock()),
                                      self.settings.daily_budget_usd, team_id=team_id)
        quoted = await admission.quote(self.engine, prepared, self.priced, day)
        hit = None if request.no_cache else await self.cached(prepared)
        return quoted if hit is None else answered_by(quoted, hit)

    async def priced(self, prepared: Prepared, reused: tuple[str, ...] = ()) -> Estimate:
        """Typical to verbose, at the reply sizes recent debates showed, with the ceiling;
        `reused` steps (a replay's) free."""
        return estimate_for(self.engine, prepared, await self.learned_sizes(), reused,
                            max_debate_usd=self.settings.max_debate_usd)

    async def learned_sizes(self) -> SizeBook:
        """What money is planned with: the reply sizes recent debates showed, and (read into the
        settings' book) the models that answer for the names asked."""
        await self.answers.refresh()
        return await self.history.sizes()

    async def submit(self, request: DebateRequest, *, origin: Origin,
                     idempotency_key: str | None = None, parent_id: str | None = None,
                     reused_steps: tuple[str, ...] = (), claim: str | None = None
                     ) -> Submission:
        """Validate, estimate, reserve and queue; or return the cached or duplicate debate.
        `reused_steps`: a replay's steps read from `parent_id` (free, so not reserved). `claim`:
        the worker running it here takes its lease in the same transaction (none sees it queued).

        Raises InvalidRequest (bad input) or BudgetExceeded (no room, with the figures).
        A new debate gets a fresh spotlight nonce, whatever the request carried; one built from
        another (a replay, a re-run: `parent_id`) keeps its source's."""
        origin = traced_origin(origin)
        nonce = request.spotlight_nonce if parent_id is not None else new_nonce()
        prepared = prepare(self.engine, with_nonce(request.model_copy(
            update={"spotlight_nonce": nonce})))
        if not request.no_cache and parent_id is None and (
                hit := await self.cached(prepared)) is not None:
            return Submission(hit, answered_by(await self.priced(prepared), hit), cached=True)
        try:
            return await self._reserve_and_queue(prepared, origin, idempotency_key, parent_id,
                                                 reused_steps, claim)
        except AlreadyExists as exc:
            if exc.existing_id is None:
                raise
            async with self.db.transaction() as session:
                existing = await debates.get(session, exc.existing_id)
            if idempotency_key is not None and not _same_request(existing, prepared.request):
                raise KeyReused(f"the idempotency key {idempotency_key!r} belongs to debate "
                                f"{existing.id}, submitted with a different request; use a new "
                                "key for a new debate", existing_id=existing.id) from None
            return Submission(existing, await self.priced(prepared), duplicate=True)

    async def cached(self, prepared: Prepared, replay_of: str | None = None
                      ) -> DebateRecord | None:
        """The finished debate that answers `prepared` now (bot/service/reuse.py)."""
        return await reuse.cached(self.db, self.engine, prepared, now=self.clock(),
                            ttl_seconds=self.settings.cache_ttl_seconds, replay_of=replay_of)

    async def _reserve_and_queue(self, prepared: Prepared, origin: Origin,
                                 idempotency_key: str | None, parent_id: str | None,
                                 reused_steps: tuple[str, ...], claim: str | None
                                 ) -> Submission:
        asked = prepared.request.mode
        day = budget_day(self.clock())

        async def queue_it(chosen: Prepared, estimate: Estimate) -> DebateRecord:
            return await self._queue(chosen, estimate, origin, idempotency_key, parent_id,
                                     reused_steps, downgraded_from=None if
                                     chosen.request.mode == asked else asked, day=day,
                                     claim=claim)

        # a replay continues its source's steps: another mode would not be that replay
        prepared, estimate, record = await admission.admitted(
            self.engine, prepared, lambda p: self.priced(p, reused_steps), queue_it,
            downgrade=not reused_steps)
        await self._maybe_alert(day)
        for hook in self.submitted_hooks:
            hook(record)
        downgraded = asked if prepared.request.mode != asked else None
        return Submission(record, estimate, downgraded_from=downgraded)

    async def _queue(self, prepared: Prepared, estimate: Estimate, origin: Origin,
                     idempotency_key: str | None, parent_id: str | None,
                     reused_steps: tuple[str, ...], *, downgraded_from: str | None, day: date,
                     claim: str | None = None) -> DebateRecord:
        now = self.clock()
        record = DebateRecord(
            id=uuid.uuid4().hex[:16], request=prepared.request, mode=prepared.request.mode,
            preset=prepared.preset.name, status=DebateStatus.QUEUED, origin=origin,
            requested_by=prepared.request.requested_by, estimate_usd=estimate.usd,
            reserved_usd=estimate.usd_high, parent_id=parent_id, reused_steps=reused_steps,
            downgraded_from=downgraded_from, created_at=now, updated_at=now,
        )
        async with self.db.transaction() as session:
            key = cache_key(self.engine, prepared,
                            replay_of=replay_source(parent_id, reused_steps))
            record = await debates.create(session, record=record, topic_key=key,
                                          idempotency_key=idempotency_key)
            await audit.append(session, debate_id=record.id, kind="debate_submitted",
                               actor=prepared.request.requested_by, data={
                                   "request": prepared.request.model_dump(mode="json"),
                                   "origin": origin.model_dump(mode="json"),
                                   "estimate": estimate.model_dump(mode="json"),
                                   "downgraded_from": downgraded_from, "parent_id": parent_id,
                                   "versions": self.versions()})
            await debates.flag(session, record.id, list(screen(of_request(prepared.request))),
                               stage="submit", actor=prepared.request.requested_by)
            if claim is not None:
                await queue.claim_one(session, record.id, worker_id=claim, now=now,
                                      lease_seconds=self.settings.lease_seconds)
            record = await debates.get(session, record.id)
            await budget.reserve(session, day=day, cap_usd=self.settings.daily_budget_usd,
                                 amount_usd=estimate.usd_high, debate_id=record.id,   # last:
                                 alert_fraction=self.settings.budget_alert_fraction,
                                 team_id=origin.team_id)   # the day's lock (storage/budget.py)
            return record

    def versions(self) -> dict[str, str]:
        return {"prompts": PROMPT_VERSION, "default_model": self.engine.model_for("pro"),
                "rehearsal": str(self.engine.is_rehearsal).lower()}

    async def _maybe_alert(self, day: date) -> None:
        await alerts.alert_if_due(self.db, self.settings, day, self.sink_factories)

    # --- reading ---
    async def get(self, debate_id: str) -> DebateRecord:
        async with self.db.transaction(readonly=True) as session:
            return await debates.get(session, debate_id)

    async def recent(self, *, status: str | None = None, limit: int = 50) -> list[DebateRecord]:
        async with self.db.transaction(readonly=True) as session:
            return await debates.list_recent(session, status=status, limit=limit)

    async def budget_today(self) -> dict[str, float | str]:
        day = budget_day(self.clock())
        async with self.db.transaction(readonly=True) as session:
            state = await budget.state(session, day, cap_usd=self.settings.daily_budget_usd,
                                       alert_fraction=self.settings.budget_alert_fraction)
        return {"day": day.isoformat(), "cap_usd": state.cap_usd, "spent_usd": state.spent_usd,
                "reserved_usd": state.reserved_usd, "remaining_usd": state.remaining_usd}

    # --- running (called by a worker that holds the lease) ---
    async def execute(self, record: DebateRecord, *, worker_id: str) -> DebateRecord:
        if record.attempts > self.settings.max_attempts:
            return await self.give_up(record, worker_id=worker_id)
        prepared = await self.oversight.prepare_run(record.id, prepare(
            self.engine, record.request), team_id=record.origin.team_id)
        chain = audit.DbEventSink(self.db)
        sinks: list[EventSink] = [JudgingSink(self.mark_judging, record.id,
                                              prepared.protocol.judging_phases)]
        sinks += [s for f in self.sink_factories if (s := f(record)) is not None]
        checkpoints = DbCheckpointStore(self.db)
        store: CheckpointStore = checkpoints
        if record.reused_steps and record.parent_id:
            store = ReplayStore(store, source_id=record.parent_id, reuse=record.reused_steps)
        sizes = await self.learned_sizes()
        checked = await readmission.readmit(
            self.db, debate_id=record.id, reserved_usd=record.reserved_usd,
            estimate=await self.priced(prepared, record.reused_steps),
            max_debate_usd=self.settings.max_debate_usd, day=budget_day(self.clock()),
            cap_usd=self.settings.daily_budget_usd, hold=record.attempts <= 1)
        if checked.refused is not None:  # nothing was spent: said so, its hold given back
            return await self.finish(record.id, self.failed_result(record, checked.refused),
                                     actor=worker_id)
        purse = DbPurse(self.db, debate_id=record.id, day=budget_day(record.created_at),
                        cap_usd=self.settings.daily_budget_usd,
                        ceiling_usd=checked.ceiling_usd, clock=self.clock)
        # a replay pays exactly the calls it announced: no judge cache (its key would follow
        # the replay's own id, so an earlier replay's verdicts answered at random)
        judged = None if record.reused_steps else self._judge_cache()
        result = await run_debate(
            prepared, debate_id=record.id, settings=self.engine, llm=self.llm(),
            store=store, sink=FanOutSink(chain, *sinks),
            evidence=evidence.DbEvidenceSource(self.db),
            writes=DbStepWrites(self.db, store=checkpoints, purse=purse, audit=chain,
                                after=FanOutSink(*sinks), cache=judged),
            step_cache=judged,
            judge_history=await self.history.judge_scores()
            if prepared.protocol.panel_statistics else None,  # read only where calibrated
            purse=purse, sizes=sizes, tracer=tracing().tracer,
        )
        return await self.finish(record.id, result, actor=worker_id)

    async def give_up(self, record: DebateRecord, *, worker_id: str) -> DebateRecord:
        """A debate whose runs keep dying (it crashed its worker every time) fails, saying so."""
        error = (f"gave up after {record.attempts - 1} interrupted attempts (limit "
                 f"{self.settings.max_attempts}); its finished steps are kept: retry it to resume")
        return await self.finish(record.id, self.failed_result(record, error), actor=worker_id)

    def failed_result(self, record: DebateRecord, error: str) -> DebateResult:
        return DebateResult(id=record.id, status=ResultStatus.FAILED, mode=Mode(record.mode),
                            topic=record.request.topic, preset=record.preset, error=error,
                            complete=False, missing=[error], rehearsal=self.engine.is_rehearsal)

    async def finish(self, debate_id: str, result: DebateResult, *, actor: str
                     ) -> DebateRecord:
        """Record the result, settle the budget with the real cost, route it for review."""
        review: Review | None = None
        finished_at = self.clock()
        async with self.db.transaction() as session:
            current = await debates.get(session, debate_id, for_update=True)
            if current.status is DebateStatus.FAILED and current.error.startswith(
                    CANCELLED_PREFIX):   # its workspace left while it ran: its replies are
                return current           # charged, its hold was released, it owes nothing
            if current.status in _FINISHED and current.lease_owner != actor:
                return current   # finished by the worker that took it over while ours ran on
            found = await debates.flag(session, debate_id, result.injection, stage="run",
                                       actor=actor)
            result = _flagged_result(result, [*current.injection, *found])
            spot = current.origin.in_oversight and self.oversight.spot_check(result)
            routed = (review_reason(result, routed_by(self.engine, result))   # not an
                      if to_reviewers(result, current.origin) else None)   # evaluation's
            record = await debates.transition_then(   # and on to its reviewers: one UPDATE
                session, debate_id, DebateStatus(result.status),
                None if routed is None else DebateStatus.AWAITING_REVIEW, actor=actor,
                reason=result.error or result.verdict[:200], then_reason=routed or "",
                result=result, cost_usd=result.cost.usd, error=result.error,
                finished_at=finished_at, lease_owner=None, lease_expires_at=None)
            if routed is not None:
                review = await reviews.create(session, debate_id=debate_id, reason=routed)
            elif spot:  # published all the same: the reviewer's decision measures routing
                review = await reviews.create(session, debate_id=debate_id, spot_check=True,
                                              reason=spot_check_reason(
                                                  self.oversight.spot_check_fraction))
            await panels.record(session, result=result, finished_at=finished_at,
                                spot_check=spot, fraction=self.oversight.spot_check_fraction)
            if self.outbox_targets:   # else nothing is owed (bot/service/delivery.py)
                from storage import outbox  # lazy: a terminal run without Slack never maps it

                unfurled = bool(await outbox.unfurls_of(session, debate_id, limit=1))
                for owed in obligations(record, review, targets=self.outbox_targets,
                                        now=finished_at, unfurled=unfurled):
                    await outbox.owe(session, debate_id=debate_id, kind=owed.kind,
                                     ref=owed.ref, target=owed.target, now=finished_at)
            await budget.settle(session, day=budget_day(current.created_at),   # last: the
                                debate_id=debate_id, actual_usd=result.cost.usd)   # day's lock
        # what the debate owes is in the outbox now; the hooks only count and hand over (quick,
        # and shielded: a cancelled worker task cannot stop them half-way)
        await asyncio.shield(run_finished_hooks(self.finished_hooks, record, review))
        return record

    async def mark_judging(self, debate_id: str) -> None:
        # one UPDATE, nothing to read first, with the other debates' writes of the moment
        await debates.advance_soon(self.db, debate_id, DebateStatus.DEBATING,
                                   DebateStatus.JUDGING, actor="engine",
                                   reason="judging started")

    async def replay(self, source_id: str, *, more_rounds: int | None = None,
                     synthesizer: str | None = None, actor: str = "cli",
                     origin: Origin | None = None, no_cache: bool = False) -> Submission:
        """A new debate from a stored one (bot/service/replays.py)."""
        return await replays.replay(self, source_id, more_rounds=more_rounds,
                                    synthesizer=synthesizer, actor=actor, origin=origin,
                                    no_cache=no_cache)

    def _judge_cache(self) -> caches.DbStepCache | None:
        ttl = self.settings.judge_cache_ttl_seconds
        return caches.DbStepCache(self.db, ttl_seconds=ttl) if ttl > 0 else None

    # --- people acting on debates ---
    async def add_evidence(self, debate_id: str, item: Evidence) -> EvidenceAdded:
        """Record human evidence for a running debate (falsy if it is not running or a dupe).
        Evidence addressed to the AI flags the debate; the findings come back to be shown."""
        async with self.db.transaction() as session:
            record = await debates.get(session, debate_id)
            if record.status not in (DebateStatus.QUEUED, DebateStatus.DEBATING,
                                     DebateStatus.JUDGING):
                return EvidenceAdded(False)
            if not await evidence.add(session, debate_id=debate_id, evidence=item):
                return EvidenceAdded(False)
            await audit.append(session, debate_id=debate_id, kind="evidence_recorded",
                               actor=item.author, data={"text": item.text,
                                                        "source_id": item.source_id})
            found = screen(of_evidence([item]))
            await debates.flag(session, debate_id, list(found), stage="evidence",
                               actor=item.author)
            return EvidenceAdded(True, found)

    async def retry(self, debate_id: str, *, actor: str) -> DebateRecord:
        """Send a failed or timed-out debate back to the queue; its finished steps are reused."""
        async with self.db.transaction() as session:
            record = await debates.get(session, debate_id)
            if record.status not in (DebateStatus.FAILED, DebateStatus.TIMED_OUT):
                raise InvalidRequest(f"only failed or timed-out debates can be retried; this one "
                                     f"is {record.status.value}")
            if record.error.startswith(CANCELLED_PREFIX):
                raise InvalidRequest(f"this debate was {record.error}; it cannot be retried")
            remaining = max(record.reserved_usd - record.cost_usd, 0.0)
            queued = await debates.transition(session, debate_id, DebateStatus.QUEUED,
                                              actor=actor, reason="retry", error="", attempts=0)
            await budget.reserve(session, day=budget_day(self.clock()),   # last: the day's lock
                                 cap_usd=self.settings.daily_budget_usd, amount_usd=remaining,
                                 debate_id=record.id, team_id=record.origin.team_id)
            return queued

def _flagged_result(result: DebateResult, flags: list[Finding]) -> DebateResult:
    """The result carrying every finding of its debate (some, such as evidence that came after
    the last phase began, only the record knew), routed to a human when there is any."""
    injection = list(dict.fromkeys([*flags, *result.injection]))
    if not injection:
        return result
    routing = result.routing if result.routing in ROUTED else Routing.HUMAN_REVIEW
    return result.model_copy(update={"injection": injection, "routing": routing})


def _same_request(existing: DebateRecord, request: DebateRequest) -> bool:
    """Whether `request` is the one `existing` was submitted with (the mode as first asked,
    before the budget downgraded it; the spotlight nonce is the service's, not the caller's)."""
    asked = existing.request
    if existing.downgraded_from:
        asked = asked.model_copy(update={"mode": existing.downgraded_from})
    mine = {"spotlight_nonce"}
    return (asked.model_dump(mode="json", exclude=mine)
            == request.model_dump(mode="json", exclude=mine))
