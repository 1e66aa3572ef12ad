"""`simple` (L1): both openings in parallel, N rebuttal rounds (both sides per round in parallel),
one verdict. Critical path: 1 + rounds + 1 dependent calls."""

from __future__ import annotations

import asyncio

from engine import prompts
from engine.domain import Plan, PlannedCall
from engine.outcomes import SimpleOutcome
from engine.protocols.base import Outcome, PlanInput
from engine.protocols.judging import judge_order
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
from engine.schemas.procon import Rebuttal, Verdict

VERDICT_TASK = (
    "Decide which position argued better (A, B or tie), with a short rationale and your "
    "confidence from 0 to 1."
)


class SimpleProtocol:
    mode = "simple"

    def plan(self, spec: PlanInput) -> Plan:
        calls = [PlannedCall(key=f"simple/opening/{s}", role=s, phase="opening", depth=1,
                             prompt_tokens=350, completion_tokens=350) for s in SIDES]
        for r in range(1, spec.rounds + 1):
            calls += [PlannedCall(key=f"simple/rebuttal/{r}/{s}", role=s, phase=f"rebuttal {r}",
                                  depth=1 + r, prompt_tokens=350 + 700 * r,
                                  completion_tokens=350) for s in SIDES]
        calls.append(PlannedCall(key="simple/verdict", role="judge", phase="verdict",
                                 depth=2 + spec.rounds, prompt_tokens=500 + 700 * (spec.rounds + 1),
                                 completion_tokens=250))
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = Transcript(topic=ctx.request.topic)
        async with ctx.phase("opening") as summary:
            await openings(ctx, "simple", t, summary)
        rounds = ctx.request.rounds if ctx.request.rounds is not None else ctx.preset.rounds
        for r in range(1, rounds + 1):
            async with ctx.phase(f"rebuttal {r}") as summary:
                await _rebuttal_round(ctx, t, r, summary)
        async with ctx.phase("verdict") as summary:
            return await _verdict(ctx, t, summary)


async def _rebuttal_round(ctx: DebateContext, t: Transcript, r: int, summary) -> None:  # type: ignore[no-untyped-def]
    task = (
        "Rebut the opposing side's claims by id (e.g. C1 or P2), and add at most two new claims "
        "if they strengthen your case."
    )
    context = context_text(ctx, t)

    async def one(side: str) -> StepOutcome[Rebuttal]:
        prompt = prompts.debater(persona(ctx, side), t.topic, task, context)
        return await ctx.step(f"simple/rebuttal/{r}/{side}", role=side, prompt=prompt,
                              schema=Rebuttal)

    pro, con = await asyncio.gather(one("pro"), one("con"))
    t.rebuttals.append({"pro": pro, "con": con})
    for side, step in (("pro", pro), ("con", con)):
        note(summary, side, step, lambda v: v.summary)


async def _verdict(ctx: DebateContext, t: Transcript, summary) -> Outcome:  # type: ignore[no-untyped-def]
    order = judge_order(ctx.debate_id, "verdict", 0)
    label = {order[0]: "A", order[1]: "B"}
    transcript = t.render(label=label, order=order)
    prompt = prompts.judge("overall reasoning quality", t.topic, transcript, VERDICT_TASK,
                           ctx.policy)
    step = await ctx.step("simple/verdict", role="judge", prompt=prompt, schema=Verdict,
                          temperature=0.2)
    note(summary, "judge", step, lambda v: v.rationale)
    out = Outcome(trace_table=trace_rows(t))
    if step.value is None:
        out.verdict = "No verdict: " + step.missing_note()
        out.missing.append(f"verdict ({step.status})")
        return out
    back = {v: k for k, v in label.items()}
    winner = "tie" if step.value.winner == "tie" else back[step.value.winner]
    out.winner = winner
    out.rationale = step.value.rationale
    out.verdict = ("Too close to call." if winner == "tie" else
                   f"{SIDE_NAME[winner].capitalize()} the proposition wins "
                   f"(judge confidence {step.value.confidence:.2f}).")
    out.outcome = SimpleOutcome(confidence=step.value.confidence)
    return out
