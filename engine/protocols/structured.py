"""`structured` (L2): opening, C cross-examination rounds (each side challenges the other's
claims; C = the request's rounds, 1 to 5, 1 by default), closing — each phase both sides in
parallel — then one judge scoring a five-dimension rubric and every claim, which fills the
argument trace table. Critical path: 3 + C dependent calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import Plan, PlannedCall
from engine.protocols.base import FinalSteps, Outcome, PlanInput, Rounds
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
from engine.provider.llm import Prompt
from engine.reading.headline import judge_headline
from engine.reading.outcomes import StructuredOutcome
from engine.schemas.procon import DIMENSIONS, Closing, CrossExamination, RubricScores
from engine.settings import JudgeSpec, PresetSpec
from engine.vocabulary import MAX_ROUNDS, Mode, Side

FAMILY = Mode.STRUCTURED.value      # the prefix of its step keys
JUDGE_KEY = f"{FAMILY}/judge"
CROSS_TASK = (
    "Cross-examine the opposing opening: for 1-3 of its claims (by id, e.g. C1 or P2) ask a "
    "pointed question (one sentence) and state the challenge (two or three sentences); the "
    "summary under 80 words."
)
CROSS_AGAIN_TASK = (
    "Cross-examination round {r}: press the opposing side further. For 1-3 of its claims (by "
    "id, e.g. C1 or P2) not yet challenged, or where the earlier challenges left the most "
    "open, ask a pointed question (one sentence) and state the challenge (two or three "
    "sentences); the summary under 80 words."
)
CLOSING_TASK = (
    "Close: answer each challenge made to your claims (by your claim id; concede honestly where "
    "it lands), and state your final claim. Two or three sentences per answer, the final claim in "
    "one or two; the summary under 100 words."
)
#: Prompt tokens of the debate's calls (plans); each later cross-examination round adds `GROWTH`.
OPENING_TOKENS, CROSS_TOKENS, CLOSING_TOKENS, JUDGE_TOKENS, GROWTH = 350, 1100, 1700, 2600, 750
RUBRIC_JUDGE = JudgeSpec(name="rubric",
                         expertise="overall reasoning quality, evidence and fairness")


def cross_rounds(requested: int | None, preset: PresetSpec) -> int:
    """C = request.rounds or preset.rounds, clamped to 1..5."""
    return max(1, min(MAX_ROUNDS, requested if requested is not None else preset.rounds))


#: The rounds of `structured` and `consensus`: cross-examination rounds.
CROSS_ROUNDS = Rounds(noun="cross-examination rounds", most=MAX_ROUNDS, count=cross_rounds)


def cross_phase(r: int) -> str:
    """The first round keeps the phase's plain name; later ones are numbered."""
    return CROSS_EXAMINATION if r == 1 else f"{CROSS_EXAMINATION} {r}"


def cross_key(r: int, side: Side) -> str:
    """The first round's key is the one debates stored before there were more rounds."""
    return f"{FAMILY}/cross/{side}" if r == 1 else f"{FAMILY}/cross/{r}/{side}"


def closing_depth(spec: PlanInput) -> int:
    """The closing's dependent round: after the opening and every cross-examination round."""
    return 2 + cross_rounds(spec.rounds, spec.preset)


def judging_tokens(spec: PlanInput) -> int:
    """What a judge's prompt carries beyond the plain debate: the later cross-examination rounds."""
    return JUDGE_TOKENS + GROWTH * (cross_rounds(spec.rounds, spec.preset) - 1)


def closing_key(side: Side) -> str:
    return f"{FAMILY}/closing/{side}"


def debate_calls(spec: PlanInput) -> list[PlannedCall]:
    """The opening, cross-examination and closing calls that `structured` and `consensus` share;
    each carries the request's text and its side's persona."""
    rounds = cross_rounds(spec.rounds, spec.preset)

    def both(key: Callable[[Side], str], phase: str, depth: int, tokens: int
             ) -> list[PlannedCall]:
        return [PlannedCall(key=key(s), role=s, phase=phase, depth=depth,
                            prompt_tokens=tokens + spec.carried(persona_of(spec.preset, s)),
                            completion_tokens=350) for s in SIDES]

    calls = both(lambda s: f"{FAMILY}/opening/{s}", OPENING, 1, OPENING_TOKENS)
    for r in range(1, rounds + 1):
        calls += both(partial(cross_key, r), cross_phase(r), 1 + r,
                      CROSS_TOKENS + GROWTH * (r - 1))
    return calls + both(closing_key, CLOSING, 2 + rounds, CLOSING_TOKENS + GROWTH * (rounds - 1))


async def run_debate_phases(ctx: DebateContext) -> Transcript:
    """Opening, the cross-examination rounds and closing; each phase's two calls run
    concurrently."""
    t = Transcript(topic=ctx.request.topic, spot=ctx.spotlight)
    async with ctx.phase(OPENING) as summary:
        await openings(ctx, FAMILY, t, summary)
    rounds = cross_rounds(ctx.request.rounds, ctx.preset)
    if not t.answered():   # nothing to cross-examine or close on
        t.skipped = [*(cross_phase(r) for r in range(1, rounds + 1)), CLOSING]
        return t
    for r in range(1, rounds + 1):
        async with ctx.phase(cross_phase(r)) as summary:
            task = CROSS_TASK if r == 1 else CROSS_AGAIN_TASK.format(r=r)
            cross = await _both(ctx, t, partial(cross_key, r), task, CrossExamination)
            t.cross.append(cross)
            for side, step in cross.items():
                note(summary, side, step, lambda v: v.challenges[0].challenge)
    async with ctx.phase(CLOSING) as summary:
        t.closings = await _both(ctx, t, closing_key, CLOSING_TASK, Closing)
        for side, closing in t.closings.items():
            note(summary, side, closing, lambda v: v.final_claim)
    return t


async def _both(ctx: DebateContext, t: Transcript, key: Callable[[Side], str], task: str,
                schema: type[Reply]) -> dict[Side, StepOutcome[Reply]]:
    user = prompts.debater_user(ctx.spotlight, t.topic, task, context_text(ctx, t))

    async def one(side: Side) -> StepOutcome[Reply]:
        prompt = Prompt(system=prompts.debater_system(ctx.spotlight, persona(ctx, side)),
                        user=user)
        return await ctx.step(key(side), role=side, prompt=prompt, schema=schema)

    pro, con = await asyncio.gather(one(Side.PRO), one(Side.CON))
    return {Side.PRO: pro, Side.CON: con}


class StructuredProtocol:
    mode = Mode.STRUCTURED
    judging_phases = frozenset({JUDGING})
    panel_statistics = False
    final_steps = FinalSteps(keys=frozenset({JUDGE_KEY}))
    rounds = CROSS_ROUNDS

    def plan(self, spec: PlanInput) -> Plan:
        judge = spec.carried(RUBRIC_JUDGE.expertise)  # the context too, spotlighted
        calls = [*debate_calls(spec), PlannedCall(
            key=JUDGE_KEY, role="judge", phase=JUDGING, depth=closing_depth(spec) + 1,
            prompt_tokens=judging_tokens(spec) + judge, completion_tokens=700)]
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        t = await run_debate_phases(ctx)
        if not t.answered():
            return t.no_argument(JUDGING)
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
