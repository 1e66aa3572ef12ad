"""`simple` (L1): both openings in parallel, N rebuttal rounds (both sides per round in parallel),
one verdict. Critical path: 1 + rounds + 1 dependent calls."""

from __future__ import annotations

import asyncio

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import PhaseSummary, Plan, PlannedCall
from engine.protocols.base import FinalSteps, Outcome, PlanInput, Rounds
from engine.protocols.judging import judge_material, judge_order, neutral_labels, side_of
from engine.protocols.procon import (
    OPENING,
    SIDE_NAME,
    SIDES,
    Transcript,
    context_text,
    note,
    openings,
    persona,
    persona_of,
    trace_rows,
)
from engine.provider.llm import Prompt
from engine.reading.outcomes import SimpleOutcome
from engine.schemas.procon import Rebuttal, Verdict
from engine.settings import PresetSpec
from engine.vocabulary import MAX_ROUNDS, Mode, Side

FAMILY = Mode.SIMPLE.value      # the prefix of its step keys
VERDICT = "verdict"
VERDICT_KEY = f"{FAMILY}/verdict"
VERDICT_LENS = "overall reasoning quality"
VERDICT_TASK = (
    "Decide which position argued better (A, B or tie), with a rationale under 150 words and "
    "your confidence from 0 to 1."
)


def rebuttal_rounds(requested: int | None, preset: PresetSpec) -> int:
    """N = request.rounds, or preset.rounds."""
    return requested if requested is not None else preset.rounds


def rebuttal_phase(r: int) -> str:
    return f"rebuttal {r}"


def rebuttal_key(r: int, side: Side) -> str:
    return f"{FAMILY}/rebuttal/{r}/{side}"


class SimpleProtocol:
    mode = Mode.SIMPLE
    judging_phases = frozenset({VERDICT})
    panel_statistics = False
    final_steps = FinalSteps(keys=frozenset({VERDICT_KEY}))
    rounds = Rounds(noun="rebuttal rounds", most=MAX_ROUNDS, count=rebuttal_rounds)

    def plan(self, spec: PlanInput) -> Plan:
        def side(s: Side) -> int:
            return spec.carried(persona_of(spec.preset, s))

        calls = [PlannedCall(key=f"{FAMILY}/opening/{s}", role=s, phase=OPENING, depth=1,
                             prompt_tokens=350 + side(s), completion_tokens=350) for s in SIDES]
        for r in range(1, spec.rounds + 1):
            calls += [PlannedCall(key=rebuttal_key(r, s), role=s, phase=rebuttal_phase(r),
                                  depth=1 + r, prompt_tokens=350 + 700 * r + side(s),
                                  completion_tokens=350) for s in SIDES]
        judge = spec.carried(VERDICT_LENS)  # judges see the context too, spotlighted
        calls.append(PlannedCall(key=VERDICT_KEY, role="judge", phase=VERDICT,
                                 depth=2 + spec.rounds,
                                 prompt_tokens=500 + 700 * (spec.rounds + 1) + judge,
                                 completion_tokens=250))
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = Transcript(topic=ctx.request.topic, spot=ctx.spotlight)
        async with ctx.phase(OPENING) as summary:
            await openings(ctx, FAMILY, t, summary)
        rounds = rebuttal_rounds(ctx.request.rounds, ctx.preset)
        if not t.answered():
            return t.no_argument(*(rebuttal_phase(r) for r in range(1, rounds + 1)), VERDICT)
        for r in range(1, rounds + 1):
            async with ctx.phase(rebuttal_phase(r)) as summary:
                await _rebuttal_round(ctx, t, r, summary)
        async with ctx.phase(VERDICT) as summary:
            return await _verdict(ctx, t, summary)


async def _rebuttal_round(ctx: DebateContext, t: Transcript, r: int,
                          summary: PhaseSummary) -> None:
    task = (
        "Rebut the opposing side's claims by id (e.g. C1 or P2), and add at most two new claims "
        "if they strengthen your case. Two or three sentences per response, at most five "
        "responses; the summary under 80 words."
    )
    user = prompts.debater_user(ctx.spotlight, t.topic, task, context_text(ctx, t))

    async def one(side: Side) -> StepOutcome[Rebuttal]:
        prompt = Prompt(system=prompts.debater_system(ctx.spotlight, persona(ctx, side)),
                        user=user)
        return await ctx.step(rebuttal_key(r, side), role=side, prompt=prompt, schema=Rebuttal)

    pro, con = await asyncio.gather(one(Side.PRO), one(Side.CON))
    t.rebuttals.append({Side.PRO: pro, Side.CON: con})
    for side, step in ((Side.PRO, pro), (Side.CON, con)):
        note(summary, side, step, lambda v: v.summary)


async def _verdict(ctx: DebateContext, t: Transcript, summary: PhaseSummary) -> Outcome:
    order = judge_order(ctx.debate_id, 0)
    label = neutral_labels(order)
    prompt = prompts.judge(ctx.spotlight, VERDICT_LENS, t.topic,
                           t.render(label=label, order=order), VERDICT_TASK, judge_material(ctx))
    step = await ctx.step(VERDICT_KEY, role="judge", prompt=prompt, schema=Verdict,
                          temperature=0.2)
    note(summary, "judge", step, lambda v: v.rationale)
    out = Outcome(trace_table=trace_rows(t))
    if step.value is None:
        out.verdict = "No verdict: " + step.missing_note()
        out.missing.append(f"verdict ({step.status})")
        return out
    winner = side_of(step.value.winner, label)
    out.winner = winner
    out.rationale = step.value.rationale
    out.verdict = ("Too close to call." if winner is Side.TIE else
                   f"{SIDE_NAME[winner].capitalize()} the proposition wins "
                   f"(judge confidence {step.value.confidence:.2f}).")
    out.outcome = SimpleOutcome(confidence=step.value.confidence)
    return out
