"""Run one debate end to end: run its protocol over a context, compute the panel's statistics,
build the result.

`prepare()` (engine/core/planning.py, re-exported here) validates and resolves a request without
calling anyone; `run_debate()` runs what it prepared. The statistics (engine/reading/verdicts.py:
numpy, krippendorff, a fifth of a second to import) are handed to the protocols through the context
and loaded only while the first calls wait on the provider: neither planning nor the start of a
debate waits for them.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.core.planning import Prepared, check_request, estimate_for, prepare
from engine.core.prompts import PROMPT_VERSION
from engine.core.runner import DebateContext
from engine.domain import DebateResult, EventKind
from engine.errors import DebateError, InvalidRequest, LLMAuthError
from engine.money.cost import breakdown
from engine.money.sizing import SizeBook
from engine.money.step_models import plan_models
from engine.money.windows import misfit, misfit_message
from engine.ports import (
    CheckpointStore,
    EventSink,
    EvidenceSource,
    NoEvidence,
    PanelStatistics,
    Purse,
    StepCache,
    StepWrites,
)
from engine.protocols import Outcome
from engine.provider.llm import CallSpec, KnowsWindows, LLMClient, Reply, T
from engine.reading.discussion import brief_for, discussion_for
from engine.settings import EngineSettings
from engine.tracing import (
    NO_TRACER,
    WORKFLOW,
    EvaluationSink,
    Tracer,
    result_attributes,
    workflow_attributes,
)
from engine.untrusted.injection import Finding
from engine.untrusted.material import in_output
from engine.vocabulary import ROUTED_TO_HUMANS, ResultStatus, Routing, StepStatus

if TYPE_CHECKING:
    from engine.reading.verdicts import ConsensusStats, Divergence

# Past the debate deadline, steps degrade at once; this margin only catches a protocol that hangs.
_HARD_STOP_MARGIN = 10.0


async def run_debate(
    prepared: Prepared,
    *,
    debate_id: str,
    settings: EngineSettings,
    llm: LLMClient,
    store: CheckpointStore,
    sink: EventSink,
    evidence: EvidenceSource | None = None,
    judge_history: dict[str, list[float]] | None = None,
    clock: Callable[[], float] = time.monotonic,
    step_cache: StepCache | None = None,
    purse: Purse | None = None,
    sizes: SizeBook | None = None,
    tracer: Tracer = NO_TRACER,
    writes: StepWrites | None = None,
) -> DebateResult:
    """Run (or resume) a debate. Never raises for the debate's own failures: the result says.
    With a `purse`, no call starts unless the debate's money covers it and the rest of its plan
    at the high reply sizes of `sizes` (engine/money/sizing.py; the prior without): the debate then
    ends incomplete, saying where its budget ran out. With a `tracer`, the debate is one
    `invoke_workflow` span (engine/tracing.py) with the judges' scores as evaluation events.
    With `writes`, each step's checkpoint, charge and event are made through it as one
    (engine/ports.py StepWrites; its events reach its own sinks, not `sink`)."""
    context = functools.partial(
        DebateContext, debate_id=debate_id, request=prepared.request, preset=prepared.preset,
        judges=prepared.judges, settings=settings, llm=llm, store=store,
        evidence=evidence or NoEvidence(), statistics=PANEL_STATISTICS, clock=clock,
        judge_history=judge_history, step_cache=step_cache, purse=purse, plan=prepared.plan,
        sizes=sizes, judging_phases=prepared.protocol.judging_phases, tracer=tracer,
        writes=writes)
    if not tracer.enabled:
        return await _run(prepared, context(sink=sink))
    with tracer.span(f"invoke_workflow {WORKFLOW}", workflow_attributes(
            debate_id, mode=prepared.protocol.mode, preset=prepared.preset.name,
            topic_chars=len(prepared.request.topic))) as span:
        result = await _run(prepared, context(sink=EvaluationSink(sink, span)))
        span.set(result_attributes(result))
        if result.status is not ResultStatus.COMPLETED:
            span.fail(str(result.status), result.error)
    return result


async def _run(prepared: Prepared, ctx: DebateContext) -> DebateResult:
    settings = ctx.settings
    await ctx.emit(EventKind.DEBATE_STARTED, topic=prepared.request.topic,
                   mode=prepared.protocol.mode, preset=prepared.preset.name,
                   judges=[j.name for j in prepared.judges], depth=prepared.plan.depth)
    status, error, outcome = ResultStatus.COMPLETED, "", Outcome()
    # the statistics and the price table load while the first phases wait on the provider,
    # not inside judging, and not on the event loop (a server's other debates go on meanwhile)
    warming: list[asyncio.Future[None]] = []

    def warm() -> None:   # once, at the debate's first provider call (_WarmsAtFirstCall)
        if not warming:
            warming.append(asyncio.ensure_future(asyncio.to_thread(
                _warm, settings, plan_models(settings, prepared.request.options, prepared.plan),
                statistics=prepared.protocol.panel_statistics)))

    ctx.llm = _WarmsAtFirstCall(ctx.llm, warm)
    try:
        async with asyncio.timeout(settings.debate_timeout + _HARD_STOP_MARGIN):
            await _fits_windows(prepared, ctx)
            outcome = await prepared.protocol.run(ctx)
    except LLMAuthError as exc:
        status, error = ResultStatus.FAILED, str(exc)
    except DebateError as exc:
        status, error = ResultStatus.FAILED, str(exc)
    except TimeoutError:
        status, error = ResultStatus.TIMED_OUT, "the debate was stopped at its hard deadline"
    if status is ResultStatus.COMPLETED and ctx.timed_out:
        status = ResultStatus.TIMED_OUT
        error = f"the debate ran past its {settings.debate_timeout:.0f} s limit"
    elif status is ResultStatus.COMPLETED and _nothing_succeeded(ctx):
        first = next(iter(ctx.records.values()), None)
        status = ResultStatus.FAILED
        error = ("no model call succeeded" + (f": {first.error}" if first and first.error
                                               else ""))
    if warming:
        await warming[0]
    result = build_result(ctx, prepared, outcome, status, error)
    await ctx.emit(EventKind.DEBATE_FINISHED, status=result.status, verdict=result.verdict,
                   cost_usd=result.cost.usd, complete=result.complete,
                   elapsed_seconds=result.elapsed_seconds)
    return result


async def _fits_windows(prepared: Prepared, ctx: DebateContext) -> None:
    """Stop, before any call is paid for, a debate its models' context windows (as the client
    finds them: a local server's, one a 400 named) cannot hold."""
    if not isinstance(ctx.llm, KnowsWindows):
        return
    models = plan_models(ctx.settings, prepared.request.options, prepared.plan)
    windows = {model: window for model in set(models.values())
               if (window := await ctx.llm.window(model)) is not None}
    found = misfit(prepared.plan, models, windows)
    if found is not None:
        raise DebateError(misfit_message(prepared.protocol.mode, found))


class _WarmsAtFirstCall:
    """The debate's client, starting `_warm`'s thread at the debate's first provider call: the
    thread's imports (numpy: ~0.1 s of CPU) hold the GIL, and started with the debate they slowed
    the preparing of the first round's calls (prompts, checkpoints, holds) by 25-70 ms at 200 ms a
    call; from the first call on they run while that round waits on the provider. A debate that
    calls no provider (every step read back) loads the statistics where they are first used."""

    def __init__(self, llm: LLMClient, first: Callable[[], object]) -> None:
        self.inner = llm
        self._first = first

    def __getattr__(self, name: str) -> Any:
        """Everything else is the client's own (its `endpoint`, which traces name)."""
        if name == "inner":   # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def rehearsal(self) -> bool:
        return self.inner.rehearsal

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        self._first()
        return await self.inner.complete(spec)

    async def window(self, model: str) -> int | None:
        return await self.inner.window(model) if isinstance(self.inner, KnowsWindows) else None

    async def aclose(self) -> None:
        await self.inner.aclose()


class _PanelStatistics:
    """engine/reading/verdicts.py as the context's `PanelStatistics` (engine/ports.py), imported
    where it is first used: by `_warm`'s thread while the first phases wait on the provider, else by
    the first judging phase. Importing it loads numpy and krippendorff, which no debate needs before
    its judges have scored, so a `dialectic run` does not wait for them before its first call."""

    def summarise(self, items: Sequence[str], scores: Mapping[str, Sequence[float | None]],
                  winners: Mapping[str, str | None], calls: Sequence[Sequence[str | None]],
                  **options: Any) -> tuple[ConsensusStats, Divergence, list[float | None]]:
        from engine.reading import verdicts  # numpy: loaded at first use (the class docstring)

        return verdicts.summarise(items, scores, winners, calls, **options)

    def calibrate(self, scores: Mapping[str, Sequence[float | None]],
                  history: Mapping[str, Sequence[float]] | None = None,
                  ) -> dict[str, list[float | None]]:
        from engine.reading import verdicts  # numpy: loaded at first use (the class docstring)

        return verdicts.calibrate(scores, history)


PANEL_STATISTICS: PanelStatistics = _PanelStatistics()


def _warm(settings: EngineSettings, models: dict[str, str], *, statistics: bool) -> None:
    """Load what a debate will need later, off the event loop: each model's price (the price
    library's first lookup loads its tables) and the agreement statistics (numpy and
    krippendorff imported, and numpy's parts that load on first use)."""
    for model in sorted(set(models.values())):
        settings.price_for(settings.priced_model(model))
    if statistics:
        from engine.reading import agreement, verdicts  # noqa: F401  (imported here: see _PanelStatistics)

        if not agreement.warmed():
            agreement.warm()


def _nothing_succeeded(ctx: DebateContext) -> bool:
    """Every step degraded: there is no debate to speak of, only a list of failures."""
    return bool(ctx.records) and all(r.status is StepStatus.DEGRADED
                                     for r in ctx.records.values())


def build_result(ctx: DebateContext, prepared: Prepared, outcome: Outcome,
                 status: ResultStatus, error: str) -> DebateResult:
    records = list(ctx.records.values())
    degraded = [{"key": r.key, "role": r.role, "phase": r.phase, "reason": r.error}
                for r in records if r.status is StepStatus.DEGRADED]
    filtered = [r.key for r in records if r.status is StepStatus.FILTERED]
    refused = [{"key": r.key, "role": r.role, "phase": r.phase, "refusal": r.error}
               for r in records if r.status is StepStatus.REFUSED]
    missing = list(outcome.missing)
    missing += [f"{d['key']}: degraded ({d['reason']})" for d in degraded]
    missing += [f"{k}: withheld by the content filter" for k in filtered]
    missing += [f"{r['key']}: refused by the model, which said: {r['refusal']}"
                for r in refused]
    if status is not ResultStatus.COMPLETED:
        missing.append(f"debate {status.value}: {error}")
    exhausted = ctx.spending.exhausted
    if exhausted is not None:  # said first, on every surface that lists what is missing
        missing.insert(0, exhausted.describe())
        error = error or exhausted.describe()
    injection = findings(ctx, prepared)
    return DebateResult(
        id=ctx.debate_id, status=status, mode=prepared.protocol.mode,
        topic=prepared.request.topic, preset=prepared.preset.name,
        verdict=outcome.verdict, winner=outcome.winner, rationale=outcome.rationale,
        consensus=outcome.consensus, divergence=outcome.divergence,
        trace_table=outcome.trace_table, phases=ctx.phases, degraded=degraded,
        filtered=filtered, refused=refused, outcome=outcome.outcome,
        cost=breakdown(records, reused=ctx.reused),
        elapsed_seconds=round(ctx.clock() - ctx.started, 3), rehearsal=ctx.rehearsal,
        complete=not missing, missing=missing, error=error, evidence=list(ctx.evidence),
        routing=routing_for(outcome, complete=not missing, flagged=bool(injection)),
        versions={"prompts": PROMPT_VERSION, "models": ",".join(sorted(
            {r.model for r in records})), "rehearsal": str(ctx.rehearsal).lower()},
        injection=injection,
        discussion=discussion_for(prepared.preset, outcome.consensus, outcome.divergence),
        brief=brief_for(prepared.preset, outcome.consensus, outcome.divergence,
                        outcome.trace_table),
    )


def findings(ctx: DebateContext, prepared: Prepared) -> list[Finding]:
    """Text addressed to the AI in the request and the evidence (found as they came), and in
    the outputs later steps read. A final step's words (a judge's "Position B wins") are the
    conclusion, not material for another model, and are not screened."""
    for record in ctx.records.values():
        if record.status is StepStatus.OK and record.key not in prepared.protocol.final_steps:
            ctx.flag(in_output(record.output, source=record.key))
    return ctx.findings


_PUBLISHED = frozenset({Routing.AUTO_APPROVE, Routing.TENTATIVE})


def routing_for(outcome: Outcome, *, complete: bool, flagged: bool = False) -> Routing:
    """Where the result goes: the panel's routing, made stricter by gaps and explicit flags. A
    debate whose text addresses the AI goes to a human whatever its alpha."""
    routing = outcome.consensus.routing if outcome.consensus else Routing.NONE
    if flagged and routing not in ROUTED_TO_HUMANS:
        return Routing.HUMAN_REVIEW
    if outcome.needs_review and (routing in _PUBLISHED or routing is Routing.NONE):
        return Routing.HUMAN_REVIEW
    if not complete and routing in _PUBLISHED:
        return Routing.HUMAN_REVIEW
    return routing


__all__ = ["InvalidRequest", "Prepared", "check_request", "estimate_for", "prepare", "run_debate"]
