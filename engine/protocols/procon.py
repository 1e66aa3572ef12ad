"""The pro/con family's shared pieces: the transcript, claim ids, neutral labels for judges.

Debaters see their claims as P1, P2... (for) and C1, C2... (against). Judges see the same content
under neutral labels, A and B, in an order that varies from judge to judge; `JudgeView` maps the
labels back. Whatever a debater wrote that addresses the AI is shown spotlighted
(`engine.untrusted.material.quoted`), so a quoted order reaches no one as an order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import PhaseSummary, TraceRow
from engine.protocols.base import Outcome
from engine.schemas.procon import Claim, Closing, CrossExamination, Position, Rebuttal
from engine.settings import PresetSpec
from engine.untrusted.material import CONTEXT, Untrusted, quoted, section
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import Side, StepStatus

Reply = TypeVar("Reply", bound=BaseModel)

SIDES: tuple[Side, Side] = (Side.PRO, Side.CON)
PREFIX = {Side.PRO: "P", Side.CON: "C"}
SIDE_NAME = {Side.PRO: "FOR", Side.CON: "AGAINST"}

# The family's phases, one name each in the plans and the runs of simple, structured, consensus.
OPENING = "opening"
CROSS_EXAMINATION = "cross-examination"
CLOSING = "closing"
JUDGING = "judging"


def other(side: Side) -> Side:
    return Side.CON if side is Side.PRO else Side.PRO


@dataclass(slots=True)
class Transcript:
    """Everything said so far, by side; degraded or filtered steps render as marked notes."""

    topic: str
    spot: Spotlight
    openings: dict[Side, StepOutcome[Position]] = field(default_factory=dict)
    rebuttals: list[dict[Side, StepOutcome[Rebuttal]]] = field(default_factory=list)
    cross: list[dict[Side, StepOutcome[CrossExamination]]] = field(default_factory=list)
    closings: dict[Side, StepOutcome[Closing]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)   # phases not run: nothing to answer
    #: each text as `quoted` shows it: the transcript is rendered again for every step and
    #: every judge, and a repeat then costs a lookup (a str keeps its hash) instead of a scan's
    shown: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def answered(self) -> bool:
        """Whether either side made an argument a later phase (or a judge) could read."""
        steps: list[StepOutcome[Any]] = [
            *self.openings.values(), *(s for r in self.rebuttals for s in r.values()),
            *(s for r in self.cross for s in r.values()), *self.closings.values()]
        return any(s.value is not None for s in steps)

    def no_argument(self, *skipped: str) -> Outcome:
        """Neither side argued: the phases that would read only failures are skipped, and
        named, rather than paid for (a rebuttal of nothing, a verdict on no argument)."""
        reasons = "; ".join(sorted({s.missing_note() for s in self.openings.values()}))
        named = ", ".join([*self.skipped, *skipped])
        return Outcome(verdict=f"No verdict: neither side made an argument ({reasons[:300]})",
                       missing=[f"skipped, as neither side made an argument: {named}"])

    def claims(self, side: Side) -> list[tuple[str, Claim]]:
        """The side's claims with their ids, openings first then rebuttal additions."""
        found: list[Claim] = []
        opening = self.openings.get(side)
        if opening is not None and opening.value is not None:
            found.extend(opening.value.claims)
        for round_ in self.rebuttals:
            reb = round_.get(side)
            if reb is not None and reb.value is not None:
                found.extend(reb.value.new_claims)
        return [(f"{PREFIX[side]}{i}", c) for i, c in enumerate(found, start=1)]

    def render(self, label: dict[Side, str] | None = None,
               order: tuple[Side, Side] = SIDES) -> str:
        """Plain text of the debate. `label` maps side -> neutral letter ("A"/"B") for judges:
        sides are then shown as "Position A" and claim ids as A1, B2..."""
        if label is None:
            names = {s: f"{SIDE_NAME[s]} ({PREFIX[s]})" for s in SIDES}
        else:
            names = {s: f"Position {label[s]}" for s in SIDES}
        ids = id_relabel(self, label)
        say = _Say(self.spot, ids, self.shown)
        parts: list[str] = []
        for side in order:
            parts.append(self._render_opening(side, names[side], say))
        for n, round_ in enumerate(self.rebuttals, start=1):
            for side in order:
                parts.append(_render_rebuttal(round_.get(side), n, names[side], say))
        numbered = len(self.cross) > 1
        for n, asked in enumerate(self.cross, start=1):
            for side in order:
                if side in asked:
                    parts.append(_render_cross(asked[side], n if numbered else None,
                                               names[side], say))
        for side in order:
            if side in self.closings:
                parts.append(_render_closing(self.closings[side], names[side], say))
        return "\n\n".join(p for p in parts if p)

    def _render_opening(self, side: Side, name: str, say: _Say) -> str:
        step = self.openings.get(side)
        if step is None:
            return ""
        if step.value is None:
            return f"## {name} — opening\n{step.missing_note()}"
        lines = [f"## {name} — opening", say(step.value.summary)]
        for cid, claim in self.claims(side)[: len(step.value.claims)]:
            lines.append(f"{say.ids.get(cid, cid)}. {say(claim.claim)} "
                         f"(evidence: {say(claim.evidence)})")
        return "\n".join(lines)


def id_relabel(t: Transcript, label: dict[Side, str] | None) -> dict[str, str]:
    """Real claim id (P1) -> the id a judge sees under its neutral labels (A1)."""
    if label is None:
        return {}
    mapping: dict[str, str] = {}
    for side in SIDES:
        for cid, _ in t.claims(side):
            mapping[cid] = label[side] + cid[1:]
    return mapping


@dataclass(frozen=True, slots=True)
class _Say:
    """How a debater's words are shown: spotlighted where they address the AI; a claim id they
    name (`ref`) under the reader's labels."""

    spot: Spotlight
    ids: dict[str, str]
    shown: dict[str, str]   # the transcript's: text -> as shown

    def __call__(self, text: str) -> str:
        found = self.shown.get(text)
        if found is None:
            found = self.shown[text] = quoted(self.spot, text)
        return found

    def ref(self, text: str) -> str:
        return self.ids.get(text.strip()) or self(text)


def _render_rebuttal(step: StepOutcome[Rebuttal] | None, n: int, name: str, say: _Say) -> str:
    if step is None:
        return ""
    if step.value is None:
        return f"## {name} — rebuttal {n}\n{step.missing_note()}"
    lines = [f"## {name} — rebuttal {n}", say(step.value.summary)]
    lines += [f"- re {say.ref(r.target)}: {say(r.response)}" for r in step.value.responses]
    lines += [f"- new claim: {say(c.claim)} (evidence: {say(c.evidence)})"
              for c in step.value.new_claims]
    return "\n".join(lines)


def _render_cross(step: StepOutcome[CrossExamination], n: int | None, name: str,
                  say: _Say) -> str:
    title = f"## {name} — cross-examination" + (f" {n}" if n is not None else "")
    if step.value is None:
        return f"{title}\n{step.missing_note()}"
    lines = [title, say(step.value.summary)]
    for c in step.value.challenges:
        lines.append(f"- to {say.ref(c.target)}: {say(c.question)} — {say(c.challenge)}")
    return "\n".join(lines)


def _render_closing(step: StepOutcome[Closing], name: str, say: _Say) -> str:
    if step.value is None:
        return f"## {name} — closing\n{step.missing_note()}"
    lines = [f"## {name} — closing", say(step.value.summary)]
    for a in step.value.answers:
        mark = " (conceded)" if a.conceded else ""
        lines.append(f"- defending {say.ref(a.claim)}{mark}: {say(a.response)}")
    lines.append(f"Final claim: {say(step.value.final_claim)}")
    return "\n".join(lines)


def persona_of(preset: PresetSpec, side: Side) -> str:
    return preset.pro_persona if side is Side.PRO else preset.con_persona


def persona(ctx: DebateContext, side: Side) -> str:
    return persona_of(ctx.preset, side)


def background(ctx: DebateContext) -> str:
    """The request's context, spotlighted under its heading ("" without one)."""
    return section(ctx.spotlight, "Background (from the conversation being debated):",
                   [Untrusted(CONTEXT, ctx.request.context)])


def policy(ctx: DebateContext) -> str:
    return section(ctx.spotlight, "Policy text:", [ctx.policy_material])


def context_text(ctx: DebateContext, transcript: Transcript | None = None) -> str:
    """What every role but the judges sees besides the topic: the request's context, the policy
    and human evidence (all spotlighted), and the debate so far."""
    parts = [background(ctx), policy(ctx),
             section(ctx.spotlight, "Evidence added by people following the debate:",
                     ctx.evidence_material())]
    if transcript is not None:
        parts.append("Debate so far:\n" + transcript.render())
    return "\n\n".join(p for p in parts if p)


async def openings(ctx: DebateContext, family: str, t: Transcript, summary: PhaseSummary) -> None:
    """Both sides open in parallel."""
    task = (
        "Give your opening: a one-paragraph summary and 2-4 numbered claims, each with its "
        "evidence or reasoning. Keep each claim to one or two sentences and its evidence to two "
        "or three; the summary under 100 words."
    )

    async def one(side: Side) -> StepOutcome[Position]:
        prompt = prompts.debater(ctx.spotlight, persona(ctx, side), t.topic, task,
                                 context_text(ctx))
        return await ctx.step(f"{family}/opening/{side}", role=side, prompt=prompt,
                              schema=Position)

    pro, con = await asyncio.gather(one(Side.PRO), one(Side.CON))
    t.openings = {Side.PRO: pro, Side.CON: con}
    for side, step in t.openings.items():
        note(summary, side, step, lambda v: v.claims[0].claim)


def note(summary: PhaseSummary, side: str, step: StepOutcome[Reply],
         pick: Callable[[Reply], object]) -> None:
    """Record a phase's highlight for a side (or role), or that its step is missing."""
    if step.value is not None:
        summary.highlights[side] = str(pick(step.value))
    elif step.status is StepStatus.FILTERED:
        summary.filtered.append(step.key)
    elif step.status is StepStatus.REFUSED:
        summary.refused.append(step.key)
    else:
        summary.degraded.append(step.key)
    summary.steps.append(step.key)


def trace_rows(t: Transcript) -> list[TraceRow]:
    """The argument trace table before judging: claims, who challenged them, the answers."""
    rows: list[TraceRow] = []
    for side in SIDES:
        challenges = _challenges_against(t, side)
        answers = _answers_of(t, side)
        for cid, claim in t.claims(side):
            challenge = challenges.get(cid)
            answer = answers.get(cid)
            rows.append(TraceRow(
                id=cid, side=side, claim=claim.claim, evidence=claim.evidence,
                challenged_by=other(side) if challenge else None,
                challenge=challenge or "",
                response=answer[0] if answer else "",
                rebutted=True if answer and answer[1] else None,
            ))
    return rows


def _challenges_against(t: Transcript, side: Side) -> dict[str, str]:
    found: dict[str, str] = {}
    for asked in t.cross:
        cross = asked.get(other(side))
        if cross is not None and cross.value is not None:
            for c in cross.value.challenges:
                found.setdefault(c.target.strip().upper(), f"{c.question} {c.challenge}")
    for round_ in t.rebuttals:
        reb = round_.get(other(side))
        if reb is not None and reb.value is not None:
            for r in reb.value.responses:
                found.setdefault(r.target.strip().upper(), r.response)
    return found


def _answers_of(t: Transcript, side: Side) -> dict[str, tuple[str, bool]]:
    closing = t.closings.get(side)
    if closing is None or closing.value is None:
        return {}
    return {a.claim.strip().upper(): (a.response, a.conceded) for a in closing.value.answers}
