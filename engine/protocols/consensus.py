"""`consensus` (L3): the structured debate, then a panel of judges (each its own expertise and
model) in parallel, calibration, weighted vote, alpha, kappa, divergence and routing.
Critical path: 3 + C dependent calls (opening, C cross-examination rounds, closing, the panel)."""

from __future__ import annotations

from engine.core.runner import DebateContext
from engine.domain import EventKind, Plan, PlannedCall
from engine.protocols.base import FinalSteps, Outcome, PlanInput
from engine.protocols.judging import JUDGE_FAMILY, judge_key, panel_consensus, run_panel
from engine.protocols.procon import JUDGING, note, trace_rows
from engine.protocols.structured import (
    CROSS_ROUNDS,
    GROWTH,
    closing_depth,
    cross_rounds,
    debate_calls,
    run_debate_phases,
)
from engine.reading.outcomes import ConsensusOutcome
from engine.vocabulary import Mode


class ConsensusProtocol:
    mode = Mode.CONSENSUS
    judging_phases = frozenset({JUDGING})
    panel_statistics = True
    final_steps = FinalSteps(families=(JUDGE_FAMILY,))
    rounds = CROSS_ROUNDS

    def plan(self, spec: PlanInput) -> Plan:
        calls = debate_calls(spec)
        later = GROWTH * (cross_rounds(spec.rounds, spec.preset) - 1)  # more rounds to read
        calls += [PlannedCall(key=judge_key(j), role=judge_key(j), phase=JUDGING,
                              depth=closing_depth(spec) + 1,
                              prompt_tokens=2700 + later + spec.carried(j.expertise),
                              completion_tokens=800, model=j.model)
                  for j in spec.judges]
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = await run_debate_phases(ctx)
        if not t.answered():
            return t.no_argument(JUDGING)
        async with ctx.phase(JUDGING) as summary:
            runs = await run_panel(ctx, t, ctx.judges)
            for run in runs:
                note(summary, run.judge.name, run.step, lambda v: v.rationale)
        result = panel_consensus(ctx, t, runs, trace_rows(t), ctx.preset.thresholds)
        await ctx.emit(
            EventKind.CONSENSUS_COMPUTED,
            alpha=result.consensus.alpha, kappa=result.consensus.kappa,
            band=result.consensus.band, routing=result.consensus.routing,
            irreconcilable=result.consensus.irreconcilable,
        )
        # each missing judge's step is listed once, with its reason, by the result itself
        # (engine/core/debate.py build_result); here only what the panel as a whole lacks
        missing = []
        if sum(1 for r in runs if r.ok) < 2:
            missing.append("agreement statistics need at least two judges' scorecards")
        return Outcome(
            verdict=result.verdict, winner=result.winner, rationale=result.rationale,
            consensus=result.consensus, divergence=result.divergence, trace_table=result.trace,
            outcome=ConsensusOutcome(), missing=missing,
        )
