"""`critique` (proposer and critic): the proposer answers, the critic challenges the latest answer
(objections with a severity, missing cases, a structured `satisfied` flag), the proposer defends or
revises; a final refined answer ends it.

Stop rules, checked after each critique round r (1..limit, limit = request.rounds or preset.rounds
or 3, at most 5): the critic is satisfied -> "critic_satisfied"; the convergence judge (with
`options["convergence_judge"]`) finds the exchange has converged -> "converged"; otherwise the
proposer revises, and after round `limit` -> "round_limit". The judge runs from round 2, beside
the critic and reading the same transcript (its last revision against the one before), so it adds
no depth. Critical path: 1 + 2 per round (1 in the stopping round) + 1 dependent calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import EventKind, Plan, PlannedCall
from engine.protocols.base import FinalSteps, Outcome, PlanInput, Rounds
from engine.protocols.procon import context_text, note
from engine.provider.llm import Prompt
from engine.reading.outcomes import CritiqueOutcome, CritiqueRound, CritiqueStop
from engine.schemas.critique import Convergence, CritiqueReview, FinalAnswer, Proposal
from engine.settings import PresetSpec
from engine.untrusted.material import quoted
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import MAX_ROUNDS, Mode

FAMILY = Mode.CRITIQUE.value      # the prefix of its step keys
DEFAULT_ROUNDS = 3
PROPOSAL, FINAL = "proposal", "final"
FINAL_KEY = f"{FAMILY}/final"
CONVERGED_FAMILY = f"{FAMILY}/converged/"
ROLE_PROPOSER = "the proposer, who answers carefully and takes criticism seriously"


def critique_phase(r: int) -> str:
    return f"critique {r}"


def revision_phase(r: int) -> str:
    return f"revision {r}"


def proposal_key(r: int) -> str:
    """Round 0 is the first proposal; round r the revision after critique r."""
    return f"{FAMILY}/proposal/{r}"


def critique_key(r: int) -> str:
    return f"{FAMILY}/critique/{r}"


def converged_key(r: int) -> str:
    return f"{CONVERGED_FAMILY}{r}"


PROPOSE_TASK = (
    "Answer the question: a one-line summary, the full answer (under 400 words) and 3-6 key "
    "points of one sentence each. Leave `changes` empty: this is your first proposal."
)
REVISE_TASK = (
    "Answer the critic's latest objections: defend what holds (say why) and revise what does "
    "not. Give the one-line summary, the full revised answer, its key points, and list in "
    "`changes` what you changed or defended and why. The answer under 400 words; one sentence "
    "per key point or change."
)
CRITIC_TASK = (
    "Review the proposer's latest answer. List specific objections, each with a severity (low, "
    "medium, high), and the cases it misses; give the overall severity of what remains and a "
    "one-line summary. At most eight objections of one or two sentences each. Set `satisfied` "
    "true only when no objection of substance remains."
)
CONVERGED_TASK = (
    "Decide whether this exchange has converged: the latest revision changed nothing material "
    "from the one before, and the critic's objections repeat points already answered. Set "
    "`converged` true only when further rounds would not improve the answer; explain in two or "
    "three sentences."
)
FINAL_TASK = (
    "Write the final, refined answer, settling what the critic raised last: a one-line "
    "conclusion, the full answer (under 500 words), its key points and the issues still open "
    "(if any), one sentence each."
)


def round_limit(requested: int | None, preset: PresetSpec) -> int:
    """request.rounds or preset.rounds or 3, clamped to 1..5."""
    return max(1, min(MAX_ROUNDS, requested or preset.rounds or DEFAULT_ROUNDS))


@dataclass(slots=True)
class Exchange:
    """The proposals (index = round) and critiques (index = round - 1) so far."""

    proposals: list[StepOutcome[Proposal]] = field(default_factory=list)
    critiques: list[StepOutcome[CritiqueReview]] = field(default_factory=list)
    judged: dict[int, StepOutcome[Convergence]] = field(default_factory=dict)

    def latest(self) -> StepOutcome[Proposal]:
        return next((p for p in reversed(self.proposals) if p.value is not None),
                    self.proposals[-1])

    def render(self, spot: Spotlight) -> str:
        """The exchange as text; what addresses the AI is shown spotlighted."""
        parts = [_render_proposal(spot, 0, self.proposals[0])]
        for r, critique in enumerate(self.critiques, start=1):
            parts.append(_render_critique(spot, r, critique))
            if r < len(self.proposals):
                parts.append(_render_proposal(spot, r, self.proposals[r]))
        return "\n\n".join(parts)


class CritiqueProtocol:
    mode = Mode.CRITIQUE
    judging_phases: frozenset[str] = frozenset()   # the critic reviews; nobody judges the answer
    panel_statistics = False
    final_steps = FinalSteps(keys=frozenset({FINAL_KEY}), families=(CONVERGED_FAMILY,))
    rounds = Rounds(noun="critique rounds", most=MAX_ROUNDS, count=round_limit)

    def plan(self, spec: PlanInput) -> Plan:
        """Every call of the longest run: `limit` rounds, none stopped early."""
        limit, judge = round_limit(spec.rounds, spec.preset), spec.options.convergence_judge
        own = spec.carried(ROLE_PROPOSER)  # every prompt carries the request's text
        calls = [PlannedCall(key=proposal_key(0), role="proposer", phase=PROPOSAL,
                             depth=1, prompt_tokens=300 + own, completion_tokens=600)]
        for r in range(1, limit + 1):
            history = 700 + 1200 * r + own
            calls.append(PlannedCall(key=critique_key(r), role="critic",
                                     phase=critique_phase(r), depth=2 * r, prompt_tokens=history,
                                     completion_tokens=450))
            if judge and r >= 2:
                calls.append(PlannedCall(key=converged_key(r), role="judge",
                                         phase=critique_phase(r), depth=2 * r,
                                         prompt_tokens=history, completion_tokens=150))
            calls.append(PlannedCall(key=proposal_key(r), role="proposer",
                                     phase=revision_phase(r), depth=2 * r + 1,
                                     prompt_tokens=history + 500, completion_tokens=650))
        calls.append(PlannedCall(key=FINAL_KEY, role="proposer", phase=FINAL,
                                 depth=2 * limit + 2, prompt_tokens=1000 + 1200 * limit + own,
                                 completion_tokens=650))
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        limit = round_limit(ctx.request.rounds, ctx.preset)
        judge = ctx.request.options.convergence_judge
        x = Exchange()
        async with ctx.phase(PROPOSAL) as summary:
            x.proposals.append(await _propose(ctx, x, 0))
            note(summary, "proposer", x.proposals[0], lambda v: v.summary)
        if x.proposals[0].value is None:   # a critique of nothing, a final answer from nothing
            return _no_proposal(x, limit)
        stopped = CritiqueStop.ROUND_LIMIT
        for r in range(1, limit + 1):
            reason = await _critique_round(ctx, x, r, judge and r >= 2)
            if reason is not None:
                stopped = reason
                break
            async with ctx.phase(revision_phase(r)) as summary:
                x.proposals.append(await _propose(ctx, x, r))
                note(summary, "proposer", x.proposals[r], lambda v: v.summary)
        async with ctx.phase(FINAL) as summary:
            final = await _final(ctx, x)
            note(summary, "proposer", final, lambda v: v.summary)
        return _outcome(x, final, stopped, limit)


async def _critique_round(ctx: DebateContext, x: Exchange, r: int,
                          judge: bool) -> CritiqueStop | None:
    """The critic (and the convergence judge beside it); the reason to stop, if any."""
    async with ctx.phase(critique_phase(r)) as summary:
        if judge:
            critique, judged = await asyncio.gather(_critique(ctx, x, r), _converged(ctx, x, r))
            x.judged[r] = judged
            note(summary, "judge", judged, lambda v: "converged" if v.converged else "not yet")
        else:
            critique = await _critique(ctx, x, r)
        x.critiques.append(critique)
        note(summary, "critic", critique, lambda v: v.summary)
    reason = _stop_reason(critique, x.judged.get(r))
    await ctx.emit(
        EventKind.ROUND_FINISHED, mode=FAMILY, round=r,
        satisfied=critique.value.satisfied if critique.value else None,
        severity=critique.value.severity if critique.value else None,
        objections=len(critique.value.objections) if critique.value else None,
        converged=_converged_flag(x.judged.get(r)), stopped_because=reason,
    )
    return reason


def _stop_reason(critique: StepOutcome[CritiqueReview],
                 judged: StepOutcome[Convergence] | None) -> CritiqueStop | None:
    """A missing (degraded) critique or verdict never stops the exchange: it proves nothing."""
    if critique.value is not None and critique.value.satisfied:
        return CritiqueStop.CRITIC_SATISFIED
    if _converged_flag(judged):
        return CritiqueStop.CONVERGED
    return None


def _converged_flag(judged: StepOutcome[Convergence] | None) -> bool | None:
    if judged is None or judged.value is None:
        return None
    return judged.value.converged


def _context(ctx: DebateContext, x: Exchange) -> str:
    parts = [context_text(ctx)]
    if x.proposals:
        parts.append("The exchange so far:\n" + x.render(ctx.spotlight))
    return "\n\n".join(p for p in parts if p)


def _prompt(ctx: DebateContext, x: Exchange, who: str, task: str) -> Prompt:
    return prompts.role(ctx.spotlight, who, ctx.request.topic, task, _context(ctx, x))


async def _propose(ctx: DebateContext, x: Exchange, r: int) -> StepOutcome[Proposal]:
    prompt = _prompt(ctx, x, ROLE_PROPOSER, REVISE_TASK if r else PROPOSE_TASK)
    return await ctx.step(proposal_key(r), role="proposer", prompt=prompt,
                          schema=Proposal)


async def _critique(ctx: DebateContext, x: Exchange, r: int) -> StepOutcome[CritiqueReview]:
    prompt = _prompt(ctx, x, "a rigorous critic: specific, fair, hard to satisfy with vague "
                     "answers", CRITIC_TASK)
    return await ctx.step(critique_key(r), role="critic", prompt=prompt,
                          schema=CritiqueReview, temperature=0.3)


async def _converged(ctx: DebateContext, x: Exchange, r: int) -> StepOutcome[Convergence]:
    prompt = _prompt(ctx, x, "an impartial judge of whether a critique exchange has converged",
                     CONVERGED_TASK)
    return await ctx.step(converged_key(r), role="judge", prompt=prompt,
                          schema=Convergence, temperature=0.2)


async def _final(ctx: DebateContext, x: Exchange) -> StepOutcome[FinalAnswer]:
    prompt = _prompt(ctx, x, "the proposer, writing the final answer after the critique",
                     FINAL_TASK)
    return await ctx.step(FINAL_KEY, role="proposer", prompt=prompt, schema=FinalAnswer)


def _render_proposal(spot: Spotlight, r: int, step: StepOutcome[Proposal]) -> str:
    title = "## Proposal" if r == 0 else f"## Revision {r}"
    if step.value is None:
        return f"{title}\n{step.missing_note()}"
    v = step.value
    lines = [title, quoted(spot, v.answer), *(f"- {quoted(spot, p)}" for p in v.key_points)]
    lines += [f"- changed: {quoted(spot, c)}" for c in v.changes]
    return "\n".join(lines)


def _render_critique(spot: Spotlight, r: int, step: StepOutcome[CritiqueReview]) -> str:
    if step.value is None:
        return f"## Critique {r}\n{step.missing_note()}"
    v = step.value
    mood = "satisfied" if v.satisfied else "not satisfied"
    lines = [f"## Critique {r} (overall severity {v.severity}; {mood})", quoted(spot, v.summary)]
    lines += [f"- [{o.severity}] {quoted(spot, o.point)}" for o in v.objections]
    lines += [f"- missing case: {quoted(spot, c)}" for c in v.missing_cases]
    return "\n".join(lines)


_WHY = {
    CritiqueStop.CRITIC_SATISFIED: "the critic was satisfied",
    CritiqueStop.CONVERGED: "the convergence judge found the exchange had converged",
    CritiqueStop.ROUND_LIMIT: "the round limit was reached",
    CritiqueStop.NO_PROPOSAL: "the proposer never answered, so there was nothing to critique",
}


def _no_proposal(x: Exchange, limit: int) -> Outcome:
    """The proposer failed: the critique rounds and the final answer are skipped, and named."""
    skipped = [p for r in range(1, limit + 1) for p in (critique_phase(r), revision_phase(r))]
    out = Outcome(outcome=CritiqueOutcome(
        stopped_because=CritiqueStop.NO_PROPOSAL, rounds_run=0, round_limit=limit, rounds=[],
        final=None, latest_proposal=None))
    out.verdict = "No final answer: the proposer never answered (" + \
        x.proposals[0].missing_note()[:300] + ")"
    out.missing.append(f"skipped, as the proposer never answered: {', '.join([*skipped, FINAL])}")
    return out


def _outcome(x: Exchange, final: StepOutcome[FinalAnswer], stopped: CritiqueStop,
             limit: int) -> Outcome:
    rounds = [
        CritiqueRound(round=r, satisfied=c.value.satisfied if c.value else None,
                      severity=c.value.severity if c.value else None,
                      objections=len(c.value.objections) if c.value else None,
                      converged=_converged_flag(x.judged.get(r)))
        for r, c in enumerate(x.critiques, start=1)
    ]
    out = Outcome(outcome=CritiqueOutcome(
        stopped_because=stopped, rounds_run=len(x.critiques), round_limit=limit, rounds=rounds,
        final=final.value, latest_proposal=x.latest().value,
    ))
    out.rationale = f"Stopped after {len(x.critiques)} critique round(s): {_WHY[stopped]}."
    if final.value is None:
        out.verdict = "No final answer: " + final.missing_note()
        out.missing.append(f"final answer ({final.status})")
        return out
    out.verdict = final.value.summary
    return out
