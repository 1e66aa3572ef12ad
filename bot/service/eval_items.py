"""One evaluation item in one mode, run through the service: a baseline (single, vote) as keyed
steps charged to its own hold on today's budget; a debate mode as a debate submitted with the
evaluation's label (origin `eval` with the run's id, out of oversight unless the run asked: see
`Origin.in_oversight`; an idempotency key naming run, mode and item), run here.

Either way nothing is paid twice: a baseline's calls are checkpointed in `evaluation_steps`, a
debate's in its own steps, and the submission's idempotency key finds the debate again on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from bot.service.admission import DOWNGRADES
from bot.service.debates import DebateService, budget_day
from bot.service.purse import DbPurse
from engine.domain import CostBreakdown, DebateRequest, DebateResult, Event, EventKind
from engine.errors import BudgetExceeded, DialecticError
from engine.evaluation.dataset import Item
from engine.evaluation.juries import eval_request
from engine.evaluation.report import ItemOutcome
from engine.evaluation.run import (
    Answered,
    baseline_context,
    baseline_plan,
    debate_answer,
    debate_answered,
    run_baseline,
    scored,
)
from engine.money.cost import breakdown, budget_refusal, estimate
from engine.money.sizing import SizeBook, ceiling
from engine.money.step_models import step_model
from engine.options import DebateOptions
from engine.ports import EventSink, FanOutSink
from engine.untrusted.material import new_nonce
from engine.vocabulary import ResultStatus
from storage import audit, budget, debates, evaluations, queue
from storage.evaluations import EvalCheckpointStore
from storage.records import DebateRecord, DebateStatus, Origin

UNFINISHED = frozenset({DebateStatus.CREATED, DebateStatus.QUEUED, DebateStatus.DEBATING,
                        DebateStatus.JUDGING})
# how often a debate another worker runs is looked at again
_POLL_SECONDS = 0.5

Spent = Callable[[float], None]


class ItemFailed(DialecticError):
    """A debate failed outright (no answer, e.g. no call succeeded): that is the provider's
    failure, not the mode's answer, so it is not stored as one; the run stops and says why."""


@dataclass(frozen=True, slots=True)
class Job:
    """One item in one mode of a run. `carrier_id` names its calls' checkpoints and its budget
    hold (at most 64 characters: run id, mode and the item's position)."""

    run_id: str
    mode: str
    index: int
    item: Item
    samples: int
    models: tuple[str, ...]
    seed: int

    review: bool = False   # `eval --review`: its debates count in oversight like any other

    @property
    def carrier_id(self) -> str:
        return evaluations.carrier_id(self.run_id, self.mode, self.index)

    @property
    def idempotency_key(self) -> str:
        return evaluations.idempotency_key(self.run_id, self.mode, self.index)


def baseline_estimate(service: DebateService, job: Job,
                      sizes: SizeBook | None = None) -> tuple[float, float]:
    """Low and high cost of a baseline item, priced as debates' calls are (at the reply sizes
    recent debates showed, `sizes`; the prior without)."""
    plan = baseline_plan(job.item, job.mode, job.samples, job.models)
    engine = service.engine
    models = {c.key: engine.priced_model(step_model(engine, DebateOptions(), c.key, c.role,
                                                    c.model)) for c in plan.calls}
    found = estimate(plan, model_for=models.__getitem__, price_for=engine.price_for,
                     sizes=replace(sizes or SizeBook(), effort_for=engine.effort_for),
                     rehearsal=engine.is_rehearsal)
    return found.usd_low or found.usd, found.usd_high


async def run_job(service: DebateService, job: Job, *, on_spent: Spent, actor: str,
                  admission: asyncio.Lock | None = None) -> tuple[ItemOutcome, str | None]:
    """The item's outcome and the debate it ran as (None for a baseline). Raises
    BudgetExceeded when today's budget cannot hold it: nothing was spent then. `admission`:
    the run's items submit their debates one at a time (see `_room_for`)."""
    if job.mode in ("single", "vote"):
        return await _baseline(service, job, on_spent), None
    return await _debate(service, job, on_spent, actor, admission or asyncio.Lock())


class _SpendSink:
    """Reports each call's cost as it finishes (the run's progress shows spend so far)."""

    def __init__(self, on_spent: Spent) -> None:
        self.on_spent = on_spent

    async def emit(self, event: Event) -> None:
        if event.kind is EventKind.STEP_FINISHED:
            self.on_spent(float(event.data.get("cost_usd") or 0.0))


async def _baseline(service: DebateService, job: Job, on_spent: Spent) -> ItemOutcome:
    plan = baseline_plan(job.item, job.mode, job.samples, job.models)
    _, high = baseline_estimate(service, job, await service.learned_sizes())
    day = budget_day(service.clock())
    cap = service.settings.daily_budget_usd
    async with service.db.transaction() as session:
        await budget.reserve(session, day=day, cap_usd=cap, amount_usd=high,
                             debate_id=job.carrier_id)
    purse = DbPurse(service.db, debate_id=job.carrier_id, day=day, cap_usd=cap,
                    ceiling_usd=ceiling(high, service.settings.max_debate_usd),
                    clock=service.clock)
    sink: EventSink = FanOutSink(audit.DbEventSink(service.db), _SpendSink(on_spent))
    ctx = baseline_context(service.engine, carrier_id=job.carrier_id, item=job.item, plan=plan,
                           llm=service.llm(), store=EvalCheckpointStore(service.db,
                                                                        clock=service.clock),
                           sink=sink, purse=purse, nonce=new_nonce())
    rng = random.Random(f"{job.seed}:{job.run_id}:{job.mode}:{job.item.id}")
    try:
        answered = await run_baseline(ctx, job.item, job.mode, samples=job.samples,
                                      models=job.models, rng=rng)
    finally:
        cost = breakdown(list(ctx.records.values()), reused=ctx.reused)
        async with service.db.transaction() as session:
            await budget.settle(session, day=day, debate_id=job.carrier_id,
                                actual_usd=cost.usd)
    return scored(job.item, answered, cost_usd=cost.usd, calls=cost.calls,
                  tokens=_tokens(cost), seconds=ctx.clock() - ctx.started)


def _tokens(cost: CostBreakdown) -> int:
    return cost.prompt_tokens + cost.completion_tokens


async def _debate(service: DebateService, job: Job, on_spent: Spent, actor: str,
                  admission: asyncio.Lock) -> tuple[ItemOutcome, str]:
    request = eval_request(service.engine, job.item, job.mode, job.models).model_copy(
        update={"requested_by": actor})
    origin = Origin(surface="eval", evaluation_id=job.run_id, evaluation_review=job.review)
    async with admission:   # no other item of the run reserves between the look and the hold
        await _room_for(service, job.idempotency_key, request)
        submission = await service.submit(request, origin=origin,
                                          idempotency_key=job.idempotency_key)
    record = submission.record
    if submission.duplicate and record.status is DebateStatus.FAILED:   # a rerun retries it
        record = await service.retry(record.id, actor=actor)
    record = await _finished(service, record, job.run_id)
    result = record.result or _no_result(record)
    on_spent(result.cost.usd)
    if result.status is ResultStatus.FAILED and debate_answer(result) is None:
        raise ItemFailed(f"the {job.mode} debate {record.id} failed ({result.error}); rerun "
                         "the evaluation to retry it")
    answered = debate_answered(job.item, result)
    if submission.downgraded_from is not None:   # the budget ran another mode: not this one's
        answered = Answered(None, None, error=f"the budget downgraded it from "
                            f"{submission.downgraded_from} to {record.mode}: not a "
                            f"{job.mode} answer")
    return scored(job.item, answered, cost_usd=result.cost.usd,
                  calls=result.cost.calls, tokens=_tokens(result.cost),
                  seconds=result.elapsed_seconds), record.id


async def _room_for(service: DebateService, key: str, request: DebateRequest) -> None:
    """BudgetExceeded when today has no room for the whole mode asked, for a mode the budget
    would otherwise downgrade (consensus): another mode's answer is not this one's, so the run
    waits for its own holds, or stops, as for any refusal. A debate submitted before (a resumed
    run) needs none."""
    if request.mode not in DOWNGRADES:
        return
    async with service.db.transaction(readonly=True) as session:
        if await evaluations.submitted(session, key):
            return
    high = (await service.estimate(request)).usd_high
    today = await service.budget_today()
    remaining, cap = float(today["remaining_usd"]), float(today["cap_usd"])
    if high > remaining + 1e-9:
        raise BudgetExceeded(budget_refusal(remaining_usd=remaining, cap_usd=cap,
                                            needed_usd=high),
                             estimate_usd=high, remaining_usd=remaining)


def _no_result(record: DebateRecord) -> DebateResult:
    error = record.error or f"the debate ended {record.status.value} without a result"
    return DebateResult(id=record.id, status=ResultStatus.FAILED, mode=record.request.mode,
                        topic=record.request.topic, error=error, complete=False,
                        missing=[error])


async def _finished(service: DebateService, record: DebateRecord, run_id: str) -> DebateRecord:
    """Run the debate here when it is claimable; wait for it while another worker holds it."""
    worker = f"eval-{run_id}"
    while record.status in UNFINISHED:
        now = service.clock()
        async with service.db.transaction() as session:
            claimed = await queue.claim_one(session, record.id, worker_id=worker,
                                            lease_seconds=service.settings.lease_seconds,
                                            now=now)
        if claimed is not None:
            return await _with_lease(service, claimed, worker,
                                     service.execute(claimed, worker_id=worker))
        await asyncio.sleep(_POLL_SECONDS)
        async with service.db.transaction(readonly=True) as session:
            record = await debates.get(session, record.id)
    return record


async def _with_lease(service: DebateService, record: DebateRecord, worker: str,
                      work: Awaitable[DebateRecord]) -> DebateRecord:
    """Keep the debate's lease while it runs here, as a worker does."""
    lease = service.settings.lease_seconds

    async def renew() -> None:
        while True:
            await asyncio.sleep(max(lease / 3, 0.05))
            async with service.db.transaction() as session:
                await queue.renew(session, debate_id=record.id, worker_id=worker,
                                  lease_seconds=lease, now=service.clock())

    keeper = asyncio.ensure_future(renew())
    try:
        return await work
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
