"""Evaluations: is a debate mode worth it on our questions? An evaluation is a batch of debates
(and baseline calls) with a label, run through the same engine, gateway, budget and audit as any
debate (bot/service/eval_items.py runs one item in one mode).

Before it starts, `preflight` says what it will cost ("about $X–$Y") against today's budget and
refuses when even the low figure does not fit. A run is stored first, each item's outcome as it
finishes; rerunning the same evaluation (same items, modes, samples and models) resumes the
newest unfinished run, paying only for what is missing. A run the budget stops is `stopped`, its
report incomplete and said so.

An evaluation keeps its own books (docs/evaluation.md): what it reports as spent is what the
budget's ledger booked for it (storage/evaluations.py `spent`), failed debates included; its
debates are labelled with the run and stay out of oversight unless `review` asks; and its own
holds never stop it: an item the budget refuses while others of the run hold money waits for
them to settle (`_OwnHolds`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

from bot.service.debates import DebateService
from bot.service.eval_items import ItemFailed, Job, baseline_estimate, run_job
from bot.service.eval_juries import juries_json, jury_report
from engine.core.planning import prepare
from engine.domain import canonical_json, sha256
from engine.errors import BudgetExceeded, InvalidRequest
from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.juries import JuryFigures, eval_request, is_jury, jury_mode
from engine.evaluation.limits import BASELINES, MAX_CONCURRENCY, MAX_SAMPLES
from engine.evaluation.report import ItemOutcome, Report, build_report, from_json, to_json
from engine.evaluation.run import check_modes, yes_no
from engine.money.cost import usd
from engine.money.sizing import SizeBook
from engine.options import DebateOptions, check_models
from storage import audit, evaluations
from storage.evaluations import FINISHED, STOPPED, EvaluationRun

MAX_ITEM_ID_CHARS = 200
REHEARSAL_NOTE = ("REHEARSAL: answers came from the offline rehearsal model (no OPENAI_API_KEY "
                  "or OPENAI_BASE_URL), which does not read the questions; the accuracy is "
                  "meaningless.")

#: progress: (mode, items done, items in the mode, USD spent so far by the run)
Progress = Callable[[str, int, int, float], None]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalSpec:
    """What to evaluate: a dataset, the modes, a vote's samples and the models named."""

    dataset: Dataset
    modes: tuple[str, ...]
    samples: int = 5
    models: tuple[str, ...] = ()
    concurrency: int = 4
    seed: int = 0
    requested_by: str = "cli"
    review: bool = False   # its debates count in oversight (reviews, judge audit...) as any do
    # `--panels`: each panel's judges' models, run as the modes jury1, jury2, ...
    panels: tuple[tuple[str, ...], ...] = ()

    def models_of(self, mode: str) -> tuple[str, ...]:
        return self.panels[int(mode.removeprefix("jury")) - 1] if is_jury(mode) else self.models


@dataclass(frozen=True, slots=True)
class Preflight:
    """The cost of what is left to run, today's room for it, and the run it resumes."""

    low_usd: float
    high_usd: float
    remaining_usd: float
    cap_usd: float
    todo: int
    total: int
    resumes: EvaluationRun | None = None
    rehearsal: bool = False

    def question(self) -> str:
        low, high = usd(self.low_usd, rounding="down"), usd(self.high_usd, rounding="up")
        span = low if low == high else f"{low}–{high}"
        resumed = (f"resuming evaluation {self.resumes.id} ({self.total - self.todo} of "
                   f"{self.total} done); " if self.resumes else "")
        note = " (rehearsal: no money is spent)" if self.rehearsal else ""
        return (f"{resumed}this evaluation will cost about {span}{note}; today's budget has "
                f"{usd(self.remaining_usd)} left of {usd(self.cap_usd)}; continue?")


@dataclass(frozen=True, slots=True)
class Finished:
    run: EvaluationRun
    report: Report
    juries: tuple[JuryFigures, ...] = ()   # `--panels`: each panel's agreement, self-preference

    def as_json(self) -> dict[str, Any]:
        return run_json(self.run, self.report, self.juries)


def run_json(run: EvaluationRun, report: Report,
             juries: Sequence[JuryFigures] = ()) -> dict[str, Any]:
    """The report as `--json` and the API give it, with the run's id, status and rehearsal
    label (the report's own keys first)."""
    found = to_json(report)
    if juries:
        found["panels"] = juries_json(juries)
    found.update({"id": run.id, "status": run.status, "rehearsal": run.rehearsal,
                  "created_at": run.created_at.isoformat(),
                  "cost_usd_total": round(run.cost_usd, 9),
                  "cost_usd_answered": round(run.answered_usd, 9),
                  "review": bool(run.spec.get("review", False))})
    if run.rehearsal:
        found["note"] = REHEARSAL_NOTE
    return found


def fingerprint(spec: EvalSpec, service: DebateService) -> str:
    """Two runs are the same evaluation when items, modes, samples, models, the default model
    and rehearsal agree."""
    return sha256(canonical_json({
        "items": [asdict(i) for i in spec.dataset.items], "modes": list(spec.modes),
        "samples": spec.samples, "models": list(spec.models), "seed": spec.seed,
        **({"panels": [list(p) for p in spec.panels]} if spec.panels else {}),
        "default": service.engine.model_for("answerer"),
        "rehearsal": service.engine.is_rehearsal}))


def _item(data: dict[str, Any]) -> Item:
    choices = data.get("choices")
    return Item(id=data["id"], question=data["question"], answer=data["answer"],
                choices=tuple(choices) if choices is not None else None,
                tolerance=data.get("tolerance"))


def spec_of(run: EvaluationRun) -> EvalSpec:
    """The spec a stored run was started with (to resume it without the dataset file)."""
    s = run.spec
    dataset = Dataset(name=run.dataset, source=run.source,
                      items=tuple(_item(i) for i in s["items"]))
    return EvalSpec(dataset=dataset, modes=tuple(s["modes"]), samples=s["samples"],
                    models=tuple(s["models"]), concurrency=s["concurrency"], seed=s["seed"],
                    requested_by=run.requested_by, review=bool(s.get("review", False)),
                    panels=tuple(tuple(p) for p in s.get("panels", [])))


@dataclass
class Evaluations:
    service: DebateService

    def check(self, spec: EvalSpec) -> EvalSpec:
        """Refuse bad input before anything is stored or estimated (InvalidRequest)."""
        modes = _modes(spec)
        if not 1 <= spec.samples <= MAX_SAMPLES:
            raise InvalidRequest(f"--samples must be 1-{MAX_SAMPLES}, not {spec.samples}")
        if not 1 <= spec.concurrency <= MAX_CONCURRENCY:
            raise InvalidRequest(f"--concurrency must be 1-{MAX_CONCURRENCY}")
        long = next((i.id for i in spec.dataset.items if len(i.id) > MAX_ITEM_ID_CHARS), None)
        if long is not None:
            raise InvalidRequest(f"an item id is longer than {MAX_ITEM_ID_CHARS} characters: "
                                 f"{long[:40]}…")
        engine = self.service.engine
        for model in {*spec.models, *(m for p in spec.panels for m in p)}:
            check_models(DebateOptions(role_models={"answerer": model}), engine.price_quote,
                         engine.configured_models(), engine.model_problem)
        for item in spec.dataset.items[:1]:
            for mode in modes:
                if mode not in BASELINES:
                    prepare(engine, eval_request(engine, item, mode, spec.models_of(mode)))
        return replace(spec, modes=modes)

    async def preflight(self, spec: EvalSpec, *, resume_id: str | None = None) -> Preflight:
        """What is left to run and what it costs; the run it resumes (named, or the newest
        unfinished run of the same evaluation)."""
        async with self.service.db.transaction(readonly=True) as session:
            if resume_id is not None:
                resumes: EvaluationRun | None = await evaluations.get(session, resume_id)
            else:
                resumes = await evaluations.unfinished(session, fingerprint(spec, self.service))
            done = await evaluations.outcomes(session, resumes.id) if resumes else {}
        jobs = self._jobs(spec, resumes.id if resumes else "x" * 16, done)
        low = high = 0.0
        sizes = await self.service.learned_sizes()
        for job in jobs:
            a, b = await self._estimate(job, sizes)
            low, high = low + a, high + b
        today = await self.service.budget_today()
        return Preflight(low_usd=low, high_usd=high, remaining_usd=float(today["remaining_usd"]),
                         cap_usd=float(today["cap_usd"]), todo=len(jobs),
                         total=len(spec.modes) * len(spec.dataset.items), resumes=resumes,
                         rehearsal=self.service.engine.is_rehearsal)

    def refusal(self, pre: Preflight) -> str | None:
        """Why the run cannot start today (None: it can): even its low figure does not fit."""
        if pre.low_usd <= pre.remaining_usd + 1e-9:
            return None
        return (f"this evaluation would cost about {usd(pre.low_usd, rounding='down')}–"
                f"{usd(pre.high_usd, rounding='up')}, more than today's budget has left "
                f"({usd(pre.remaining_usd)} of {usd(pre.cap_usd)}); run fewer items or modes "
                "(--n, --modes), or raise DIALECTIC_DAILY_BUDGET_USD")

    async def _estimate(self, job: Job, sizes: SizeBook) -> tuple[float, float]:
        if job.mode in BASELINES:
            return baseline_estimate(self.service, job, sizes)
        found = await self.service.estimate(eval_request(self.service.engine, job.item,
                                                         job.mode, job.models))
        return found.usd_low or found.usd, found.usd_high

    @staticmethod
    def _jobs(spec: EvalSpec, run_id: str, done: dict[str, list[ItemOutcome]]) -> list[Job]:
        finished = {(mode, o.item_id) for mode, items in done.items() for o in items}
        return [Job(run_id=run_id, mode=mode, index=index, item=item, samples=spec.samples,
                    models=spec.models_of(mode), seed=spec.seed, review=spec.review)
                for mode in spec.modes for index, item in enumerate(spec.dataset.items)
                if (mode, item.id) not in finished]

    async def start(self, spec: EvalSpec, pre: Preflight) -> EvaluationRun:
        """The run to execute: the resumed one, or a new one stored with its estimate."""
        if pre.resumes is not None:
            return pre.resumes
        now = self.service.clock()
        run = EvaluationRun(
            id=uuid.uuid4().hex[:16], fingerprint=fingerprint(spec, self.service),
            dataset=spec.dataset.name, source=spec.dataset.source,
            spec={"items": [asdict(i) for i in spec.dataset.items], "modes": list(spec.modes),
                  "samples": spec.samples, "models": list(spec.models),
                  "concurrency": spec.concurrency, "seed": spec.seed, "review": spec.review,
                  "panels": [list(p) for p in spec.panels]},
            status="running", rehearsal=self.service.engine.is_rehearsal,
            estimate_low_usd=pre.low_usd, estimate_high_usd=pre.high_usd,
            created_at=now, updated_at=now, requested_by=spec.requested_by)
        async with self.service.db.transaction() as session:
            run = await evaluations.create(session, run=run)
            await audit.append(session, debate_id=None, kind="evaluation_started",
                               actor=spec.requested_by, data={
                                   "evaluation": run.id, "dataset": run.dataset,
                                   "source": run.source, "modes": list(spec.modes),
                                   "items": len(spec.dataset.items),
                                   "estimate_usd": [pre.low_usd, pre.high_usd],
                                   "rehearsal": run.rehearsal})
        return run

    async def execute(self, run: EvaluationRun, spec: EvalSpec, *,
                      progress: Progress | None = None) -> Finished:
        """Run what is missing, at most `concurrency` items at once; store each outcome as it
        comes. An item the budget refuses while the run's own items hold money waits for them
        to settle; the run stops (starts no new item) when the budget refuses one with none of
        its own holding, or a debate fails outright."""
        async with self.service.db.transaction(readonly=True) as session:
            done = await evaluations.outcomes(session, run.id)
        counts = {m: len(done.get(m, [])) for m in spec.modes}
        total = len(spec.dataset.items)
        spent_so_far = [run.cost_usd]   # what the run has cost, this process's calls added
        gate = asyncio.Semaphore(spec.concurrency)
        holds = _OwnHolds()
        admission = asyncio.Lock()

        def spent(amount: float) -> None:
            spent_so_far[0] += amount

        async def one(job: Job) -> None:
            async with gate:
                try:
                    found = await holds.run(lambda: run_job(self.service, job, on_spent=spent,
                                                            actor=spec.requested_by,
                                                            admission=admission))
                except ItemFailed as exc:
                    await holds.stop(str(exc))
                    return
                if found is None:
                    return
                outcome, debate_id = found
                await self._store(run.id, job.mode, outcome, debate_id)
                counts[job.mode] += 1
                if progress is not None:
                    progress(job.mode, counts[job.mode], total, spent_so_far[0])

        if progress is not None:
            for mode in spec.modes:
                progress(mode, counts[mode], total, spent_so_far[0])
        await asyncio.gather(*(one(job) for job in self._jobs(spec, run.id, done)))
        return await self._finish(run, spec, stopped=holds.stopped)

    async def _store(self, run_id: str, mode: str, outcome: ItemOutcome,
                     debate_id: str | None) -> None:
        async with self.service.db.transaction() as session:
            await evaluations.put_outcome(session, run_id=run_id, mode=mode, outcome=outcome,
                                          debate_id=debate_id, now=self.service.clock())

    async def _finish(self, run: EvaluationRun, spec: EvalSpec, *,
                      stopped: str | None) -> Finished:
        async with self.service.db.transaction() as session:
            done = await evaluations.outcomes(session, run.id)
            report = _report_of(spec, done, rehearsal=run.rehearsal)
            if stopped is not None:
                report = replace(report, complete=False, stopped=stopped)
            status = FINISHED if report.complete else STOPPED
            run = await evaluations.finish(session, run.id, status=status,
                                           report=to_json(report), now=self.service.clock())
            await audit.append(session, debate_id=None, kind="evaluation_finished",
                               actor=spec.requested_by, data={
                                   "evaluation": run.id, "status": status,
                                   "cost_usd": run.cost_usd, "complete": report.complete,
                                   "missing": list(report.missing),
                                   "stopped": report.stopped})
        return Finished(run, report, tuple(await jury_report(self.service, run.id, spec.panels)))

    async def show(self, run_id: str) -> Finished:
        """A stored run and its report (a run still going: what is stored so far, incomplete)."""
        async with self.service.db.transaction(readonly=True) as session:
            run = await evaluations.get(session, run_id)
            done = await evaluations.outcomes(session, run_id)
        juries = tuple(await jury_report(self.service, run_id, spec_of(run).panels))
        if run.report is not None and run.status == FINISHED:
            return Finished(run, from_json(run.report), juries)
        report = _report_of(spec_of(run), done, rehearsal=run.rehearsal)
        if run.report is not None:   # stopped: why it stopped is in the stored report
            report = replace(report, complete=False, stopped=from_json(run.report).stopped)
        return Finished(run, report, juries)

    async def recent(self, *, limit: int = 20) -> list[EvaluationRun]:
        async with self.service.db.transaction(readonly=True) as session:
            return await evaluations.recent(session, limit=limit)


def _modes(spec: EvalSpec) -> tuple[str, ...]:
    """The modes asked (checked), then one jury mode per panel (yes/no items only)."""
    panels = {jury_mode(i) for i in range(len(spec.panels))}
    asked = [m for m in spec.modes if m not in panels]   # a jury mode without its panel: unknown
    modes = check_modes(asked, spec.dataset) if asked or not spec.panels else ()
    if spec.panels and not all(yes_no(item) for item in spec.dataset.items):
        raise InvalidRequest("--panels judge consensus debates, which answer yes or no: every "
                             "answer of the dataset must be yes or no (try --builtin decisions)")
    return (*modes, *(jury_mode(i) for i in range(len(spec.panels))))


def _in_order(outcomes: Sequence[ItemOutcome], dataset: Dataset) -> list[ItemOutcome]:
    position = {item.id: n for n, item in enumerate(dataset.items)}
    return sorted((o for o in outcomes if o.item_id in position),
                  key=lambda o: position[o.item_id])


def _report_of(spec: EvalSpec, done: dict[str, list[ItemOutcome]], *,
               rehearsal: bool) -> Report:
    """The report of what is stored, modes in the order asked, items in the dataset's."""
    return build_report(spec.dataset, {m: _in_order(done.get(m, []), spec.dataset)
                                       for m in spec.modes},
                        vote_samples=spec.samples if "vote" in spec.modes else None,
                        rehearsal=rehearsal)


class _OwnHolds:
    """The run's items in flight, and whether the run has stopped. An item the budget refuses
    (nothing spent then) while others of the run are in flight waits until one of them ends
    (its hold settled) and asks again; the run stops only when the budget refuses an item and
    none of its own was in flight or ended since it asked: then what others hold or what is
    spent leaves no room."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.settled = 0            # items of the run that ended, holds released
        self.stopped: str | None = None
        self._changed = asyncio.Condition()

    async def run(self, work: Callable[[], Awaitable[_T]]) -> _T | None:
        """`work()`'s result; None when the run has stopped (the item was not run)."""
        while self.stopped is None:
            async with self._changed:
                self.in_flight += 1
                seen = self.settled
            refused: BudgetExceeded | None = None
            try:
                found = await work()
            except BudgetExceeded as exc:
                refused = exc   # not ended: it waits for its own items below, then asks again
            finally:
                if refused is None:   # ran, failed or was cancelled: its hold is released
                    await self._ended()
            if refused is None:
                return found
            if not await self._wait(seen, str(refused)):
                return None
        return None

    async def _ended(self) -> None:
        async with self._changed:
            self.in_flight -= 1
            self.settled += 1
            self._changed.notify_all()

    async def _wait(self, seen: int, refusal: str) -> bool:
        """After a refusal: True to ask again (an own item settled since, or now has); False
        when the run stops (this refusal, with none of its own holding)."""
        async with self._changed:
            self.in_flight -= 1
            if self.settled == seen and self.in_flight == 0 and self.stopped is None:
                self.stopped = refusal
                self._changed.notify_all()
            await self._changed.wait_for(
                lambda: self.settled != seen or self.stopped is not None)
            return self.stopped is None

    async def stop(self, reason: str) -> None:
        """Start no new item (a debate failed outright); the ones in flight finish."""
        async with self._changed:
            if self.stopped is None:
                self.stopped = reason
            self._changed.notify_all()
