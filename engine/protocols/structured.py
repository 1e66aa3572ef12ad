"""`structured` (L2): opening, cross-examination (each side challenges the other's opening),
closing — each phase both sides in parallel — then one judge scoring a five-dimension rubric and
every claim, which fills the argument trace table. Critical path: 4 dependent calls."""

from __future__ import annotations

import asyncio

from engine import prompts
from engine.domain import Plan, PlannedCall
from engine.headline import judge_headline
from engine.outcomes import StructuredOutcome
from engine.protocols.base import FinalSteps, Outcome, PlanInput
from engine.protocols.judging import judged_trace, run_judge
from engine.protocols.procon import (
    CLOSING,
    CROSS_EXAMINATION,
    JUDGING,
    OPENING,
    SIDES,
    Reply,
    Transcript,
    context_text,
    note,
    openings,
    persona,
    persona_of,
    trace_rows,
)
from engine.runner import DebateContext, StepOutcome
from engine.schemas.procon import DIMENSIONS, Closing, CrossExamination, RubricScores
from engine.settings import JudgeSpec
from engine.vocabulary import Mode, Side

FAMILY = Mode.STRUCTURED.value      # the prefix of its step keys
JUDGE_KEY = f"{FAMILY}/judge"
#: The debate `structured` and `consensus` share: (phase, step key segment, prompt tokens).
DEBATE_PHASES: tuple[tuple[str, str, int], ...] = (
    (OPENING, "opening", 350), (CROSS_EXAMINATION, "cross", 1100), (CLOSING, "closing", 1700))
CROSS_TASK = (
    "Cross-examine the opposing opening: for 1-3 of its claims (by id, e.g. C1 or P2) ask a "
    "pointed question (one sentence) and state the challenge (two or three sentences); the "
    "summary under 80 words."
)
CLOSING_TASK = (
    "Close: answer each challenge made to your claims (by your claim id; concede honestly where "
    "it lands), and state your final claim. Two or three sentences per answer, the final claim in "
    "one or two; the summary under 100 words."
)
RUBRIC_JUDGE = JudgeSpec(name="rubric",
                         expertise="overall reasoning quality, evidence and fairness")


def debate_calls(spec: PlanInput) -> list[PlannedCall]:
    """The opening, cross-examination and closing calls that `structured` and `consensus` share;
    each carries the request's text and its side's persona."""
    calls: list[PlannedCall] = []
    for depth, (phase, key, p_tok) in enumerate(DEBATE_PHASES, start=1):
        calls += [PlannedCall(key=f"{FAMILY}/{key}/{s}", role=s, phase=phase, depth=depth,
                              prompt_tokens=p_tok + spec.carried(persona_of(spec.preset, s)),
                              completion_tokens=350) for s in SIDES]
    return calls


async def run_debate_phases(ctx: DebateContext) -> Transcript:
    """Opening, cross-examination and closing; each phase's two calls run concurrently."""
    t = Transcript(topic=ctx.request.topic, spot=ctx.spotlight)
    async with ctx.phase(OPENING) as summary:
        await openings(ctx, FAMILY, t, summary)
    async with ctx.phase(CROSS_EXAMINATION) as summary:
        t.cross = await _both(ctx, t, "cross", CROSS_TASK, CrossExamination)
        for side, step in t.cross.items():
            note(summary, side, step, lambda v: v.challenges[0].challenge)
    async with ctx.phase(CLOSING) as summary:
        t.closings = await _both(ctx, t, "closing", CLOSING_TASK, Closing)
        for side, closing in t.closings.items():
            note(summary, side, closing, lambda v: v.final_claim)
    return t


async def _both(ctx: DebateContext, t: Transcript, key: str, task: str,
                schema: type[Reply]) -> dict[Side, StepOutcome[Reply]]:
    context = context_text(ctx, t)

    async def one(side: Side) -> StepOutcome[Reply]:
        prompt = prompts.debater(ctx.spotlight, persona(ctx, side), t.topic, task, context)
        return await ctx.step(f"{FAMILY}/{key}/{side}", role=side, prompt=prompt, schema=schema)

    pro, con = await asyncio.gather(one(Side.PRO), one(Side.CON))
    return {Side.PRO: pro, Side.CON: con}


class StructuredProtocol:
    mode = Mode.STRUCTURED
    judging_phases = frozenset({JUDGING})
    final_steps = FinalSteps(keys=frozenset({JUDGE_KEY}))

    def plan(self, spec: PlanInput) -> Plan:
        judge = spec.carried(RUBRIC_JUDGE.expertise)  # the context too, spotlighted
        calls = [*debate_calls(spec), PlannedCall(key=JUDGE_KEY, role="judge", phase=JUDGING,
                                                  depth=4, prompt_tokens=2600 + judge,
                                                  completion_tokens=700)]
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = await run_debate_phases(ctx)
        async with ctx.phase(JUDGING) as summary:
            run = await run_judge(ctx, t, RUBRIC_JUDGE, 0, JUDGE_KEY)
            note(summary, "judge", run.step, lambda v: v.rationale)
        out = Outcome(trace_table=trace_rows(t))
        if run.step.value is None or run.winner is None:
            out.verdict = "No verdict: " + run.step.missing_note()
            out.missing.append(f"rubric judge ({run.step.status})")
            return out
        out.trace_table = judged_trace(out.trace_table, [run])
        totals = {s: sum(run.rubric[s][d] for d in DIMENSIONS) / len(DIMENSIONS) for s in SIDES}
        headline = judge_headline(run.winner, totals)
        out.winner, out.verdict = headline.winner, headline.text
        out.rationale = run.step.value.rationale
        out.outcome = StructuredOutcome(rubric={
            side: RubricScores.model_validate(run.rubric[side]) for side in SIDES})
        return out
