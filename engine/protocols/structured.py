"""`structured` (L2): opening, cross-examination (each side challenges the other's opening),
closing — each phase both sides in parallel — then one judge scoring a five-dimension rubric and
every claim, which fills the argument trace table. Critical path: 4 dependent calls."""

from __future__ import annotations

import asyncio

from engine import prompts
from engine.domain import Plan, PlannedCall
from engine.outcomes import StructuredOutcome
from engine.protocols.base import Outcome, PlanInput
from engine.protocols.judging import judged_trace, run_judge
from engine.protocols.procon import (
    SIDE_NAME,
    SIDES,
    Transcript,
    context_text,
    note,
    openings,
    persona,
    trace_rows,
)
from engine.runner import DebateContext, StepOutcome
from engine.schemas.procon import DIMENSIONS, Closing, CrossExamination, RubricScores
from engine.settings import JudgeSpec

FAMILY = "structured"
CROSS_TASK = (
    "Cross-examine the opposing opening: for 1-3 of its claims (by id, e.g. C1 or P2) ask a "
    "pointed question and state the challenge."
)
CLOSING_TASK = (
    "Close: answer each challenge made to your claims (by your claim id; concede honestly where "
    "it lands), and state your final claim."
)
RUBRIC_JUDGE = JudgeSpec(name="rubric",
                         expertise="overall reasoning quality, evidence and fairness")


def debate_calls(depth0: int = 0) -> list[PlannedCall]:
    """The opening, cross and closing calls that `structured` and `consensus` share."""
    calls: list[PlannedCall] = []
    phases = (("opening", "opening", 350), ("cross", "cross-examination", 1100),
              ("closing", "closing", 1700))
    for depth, (key, phase, p_tok) in enumerate(phases, start=depth0 + 1):
        calls += [PlannedCall(key=f"{FAMILY}/{key}/{s}", role=s, phase=phase, depth=depth,
                              prompt_tokens=p_tok, completion_tokens=350) for s in SIDES]
    return calls


async def run_debate_phases(ctx: DebateContext) -> Transcript:
    """Opening, cross-examination and closing; each phase's two calls run concurrently."""
    t = Transcript(topic=ctx.request.topic)
    async with ctx.phase("opening") as summary:
        await openings(ctx, FAMILY, t, summary)
    async with ctx.phase("cross-examination") as summary:
        t.cross = await _both(ctx, t, "cross", CROSS_TASK, CrossExamination)
        for side, step in t.cross.items():
            note(summary, side, step, lambda v: v.challenges[0].challenge)
    async with ctx.phase("closing") as summary:
        t.closings = await _both(ctx, t, "closing", CLOSING_TASK, Closing)
        for side, closing in t.closings.items():
            note(summary, side, closing, lambda v: v.final_claim)
    return t


async def _both(ctx: DebateContext, t: Transcript, phase: str, task: str,
                schema: type) -> dict[str, StepOutcome]:  # type: ignore[type-arg]
    context = context_text(ctx, t)

    async def one(side: str) -> StepOutcome:  # type: ignore[type-arg]
        prompt = prompts.debater(persona(ctx, side), t.topic, task, context)
        return await ctx.step(f"{FAMILY}/{phase}/{side}", role=side, prompt=prompt, schema=schema)

    pro, con = await asyncio.gather(one("pro"), one("con"))
    return {"pro": pro, "con": con}


class StructuredProtocol:
    mode = "structured"

    def plan(self, spec: PlanInput) -> Plan:
        calls = [*debate_calls(), PlannedCall(key=f"{FAMILY}/judge", role="judge",
                                              phase="judging", depth=4, prompt_tokens=2600,
                                              completion_tokens=700)]
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = await run_debate_phases(ctx)
        async with ctx.phase("judging") as summary:
            run = await run_judge(ctx, t, RUBRIC_JUDGE, 0, f"{FAMILY}/judge")
            note(summary, "judge", run.step, lambda v: v.rationale)
        out = Outcome(trace_table=trace_rows(t))
        if not run.ok or run.step.value is None:
            out.verdict = "No verdict: " + run.step.missing_note()
            out.missing.append(f"rubric judge ({run.step.status})")
            return out
        out.trace_table = judged_trace(out.trace_table, [run])
        totals = {s: sum(run.rubric[s][d] for d in DIMENSIONS) / len(DIMENSIONS) for s in SIDES}
        out.winner = run.winner
        out.rationale = run.step.value.rationale
        score = f"{totals['pro']:.1f} for vs {totals['con']:.1f} against (rubric mean)"
        out.verdict = ("Too close to call: " + score + "." if run.winner == "tie" else
                       f"{SIDE_NAME[run.winner or 'pro'].capitalize()} the proposition wins: "
                       f"{score}.")
        out.outcome = StructuredOutcome(rubric={
            side: RubricScores.model_validate(run.rubric[side]) for side in SIDES})
        return out
