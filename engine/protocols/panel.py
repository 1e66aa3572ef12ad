"""`panel` (mutual dissent): N panelists answer independently and in parallel, R reflection rounds
in which each sees its own previous answer and everyone else's and refines it (a round's panelists
in parallel), then a synthesizer distils the final answer. With a ground truth
(`options.ground_truth`) a judge grades the synthesis. Critical path: 1 + R + 1 (+1 graded)
dependent calls.

Multi-perspective review is the same mode with named perspectives (`preset.perspectives`, e.g.
security, performance, maintainability): every answer carries `approve`, and reflection stops
early once every perspective approves (`options.stop_when_all_approve` turns that rule on or
off for any panel; it is on by default only when perspectives are named).

Agreement, per round, is stance agreement: 1 - sd / 4.5, where sd is the population standard
deviation of the panelists' 1-10 stances and 4.5 the largest one possible on that scale (half the
panel at 1, half at 10). 1.0 means identical stances, 0.0 a perfect split, None fewer than two
answers. Krippendorff's alpha would need several shared items per round with variation between
them; a round gives one shared item per panelist (its stance), and alpha is undefined exactly when
the panel agrees completely, so the normalised spread is the defensible measure here.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import EventKind, PhaseSummary, Plan, PlannedCall
from engine.options import DebateOptions
from engine.protocols.base import FinalSteps, Outcome, PlanInput, Rounds
from engine.protocols.procon import context_text, note
from engine.reading.outcomes import PanelistFinal, PanelOutcome, PanelStop, RoundAgreement
from engine.schemas.panel import PanelAnswer, PanelGrade, PanelReflection, PanelSynthesis
from engine.settings import PresetSpec
from engine.untrusted.material import (
    REFERENCE,
    Untrusted,
    panelist_context_label,
    perspective_label,
    quoted,
    section,
)
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import MAX_JUDGES, Mode

FAMILY = Mode.PANEL.value      # the prefix of its step keys
ANSWERS, SYNTHESIS, GRADING = "answers", "synthesis", "grading"
SYNTHESIS_KEY, GRADE_KEY = f"{FAMILY}/synthesis", f"{FAMILY}/grade"
MAX_PANELISTS = MAX_JUDGES        # the panelists are the panel's judges
MAX_REFLECTION_ROUNDS = 3
MAX_SPREAD = 4.5  # population sd of stances split evenly between 1 and 10
DEFAULT_PERSONAS: tuple[str, ...] = (
    "a pragmatic engineer", "a sceptical economist", "a risk officer", "a customer advocate",
    "an operations lead", "a security specialist", "a product strategist", "a devil's advocate",
)
ANSWER_TASK = (
    "Answer the question from your own perspective: a full answer, 2-5 key points, your stance "
    "from 1 to 10 (how strongly you endorse the proposition: 1 reject, 10 fully endorse), your "
    "confidence from 0 to 1, whether you approve it as it stands from your perspective, and a "
    "one-line summary of your position. The answer under 250 words; each key point one sentence."
)
REFLECT_TASK = (
    "Reflection round {r} of {n}. Critique the other panelists' answers and your own previous "
    "one (what is wrong, what is missing), then give your refined answer with the same fields: "
    "answer, key points, stance 1-10, confidence 0-1, approve, one-line summary. Move your stance "
    "only for reasons you can name, and say what changed (one or two sentences). The critique "
    "under 150 words, the answer under 250."
)
SYNTHESIS_TASK = (
    "Distil the panel's final answers into one answer: a one-line conclusion, the full answer, "
    "where the panelists agree and where they still disagree, the rationale (whose points "
    "carried it and why), and your confidence from 0 to 1. The answer under 300 words, the "
    "rationale under 150, one sentence per agreement or disagreement, at most six of each."
)
GRADE_TASK = (
    "Compare the answer with the reference answer. Score its accuracy and its completeness from "
    "1 to 10, list the reference's points the answer misses (one line each), and give a "
    "rationale under 150 words."
)


GIVEN_PERSONA = "a panelist reviewing from the perspective given to you below"


@dataclass(frozen=True, slots=True)
class Panelist:
    """One panelist: `name` goes into step keys and its role (`panelist/<name>`). A perspective
    the request named (not the preset) is untrusted: the persona is then neutral, the name a
    number, and the perspective itself is spotlighted in the panelist's prompt, as its context."""

    name: str
    persona: str
    perspective: Untrusted | None = None
    context: Untrusted | None = None
    model: str | None = None

    @property
    def role(self) -> str:
        return f"panelist/{self.name}"

    @property
    def untrusted(self) -> tuple[str, ...]:
        """The untrusted text of its own that each of its prompts carries (for estimates)."""
        return tuple(piece.text for piece in (self.perspective, self.context) if piece)


# --- configuration: who sits on the panel, how many rounds ---------------------------------


def stance_agreement(stances: Sequence[int]) -> float | None:
    """1 - population sd / 4.5 over 1-10 stances; None with fewer than two stances."""
    if len(stances) < 2:
        return None
    mean = sum(stances) / len(stances)
    sd = math.sqrt(sum((s - mean) ** 2 for s in stances) / len(stances))
    return round(max(0.0, 1.0 - sd / MAX_SPREAD), 4)


def reflection_rounds(requested: int | None, preset: PresetSpec) -> int:
    """R = request.rounds or preset.rounds, clamped to 1..3."""
    return max(1, min(MAX_REFLECTION_ROUNDS, requested or preset.rounds))


def panelists_for(preset: PresetSpec, options: DebateOptions,
                  judges: int | None) -> list[Panelist]:
    """Personas from the preset's perspectives, the options' or the defaults; the count from
    `options.panelists`, the request's judge count, the number of named perspectives, or 3."""
    given = [] if preset.perspectives else list(options.perspectives)
    named = list(preset.perspectives) or given
    count = options.panelists or judges or len(named) or 3
    count = max(2, min(MAX_PANELISTS, count))
    pool = named or list(DEFAULT_PERSONAS)
    contexts, models = options.contexts, options.models
    members: list[Panelist] = []
    seen: set[str] = set()
    for i in range(count):
        j = i % len(pool)
        context = (Untrusted(panelist_context_label(i), contexts[i])
                   if i < len(contexts) and contexts[i].strip() else None)
        model = (models[i] or None) if i < len(models) else None
        if given:
            members.append(Panelist(
                name=_unique(f"perspective-{j + 1}", seen), persona=GIVEN_PERSONA,
                perspective=Untrusted(perspective_label(j), pool[j]), context=context,
                model=model))
        else:
            members.append(Panelist(name=_unique(_slug(pool[j]), seen),
                                    persona=_persona(pool[j]), context=context, model=model))
    return members


def stops_on_approval(preset: PresetSpec, options: DebateOptions) -> bool:
    flag = options.stop_when_all_approve
    if flag is None:
        return bool(preset.perspectives or options.perspectives)
    return flag


def _slug(perspective: str) -> str:
    words = re.sub(r"[^a-z0-9]+", " ", perspective.lower()).split()
    if words and words[0] in {"a", "an", "the"}:
        words = words[1:]
    return "-".join(words)[:32].strip("-") or "panelist"


def _unique(name: str, seen: set[str]) -> str:
    candidate, n = name, 1
    while candidate in seen:
        n += 1
        candidate = f"{name}-{n}"
    seen.add(candidate)
    return candidate


def _persona(perspective: str) -> str:
    first = perspective.split(maxsplit=1)[0].lower() if perspective.strip() else ""
    if first in {"a", "an", "the"}:
        return perspective
    return f"a panelist reviewing from the {perspective} perspective"


def round_phase(r: int) -> str:
    """Round 0 is the independent answers; rounds 1..R reflect."""
    return ANSWERS if r == 0 else f"reflection {r}"


def answer_key(r: int, member: Panelist) -> str:
    return f"{FAMILY}/answer/{r}/{member.name}"


def _plan_judges(spec: PlanInput) -> int | None:
    """The panel size the request asked for (None: take it from options or perspectives)."""
    return spec.judges_requested


# --- the protocol ---------------------------------------------------------------------------


@dataclass(slots=True)
class PanelState:
    """Every panelist's answers so far, one per round (degraded/filtered ones included)."""

    members: list[Panelist]
    answers: dict[str, list[StepOutcome[Any]]]

    def latest(self, name: str) -> StepOutcome[Any] | None:
        """The panelist's most recent usable answer, or its most recent step if none is usable."""
        steps = self.answers[name]
        usable = [s for s in steps if s.value is not None]
        return usable[-1] if usable else (steps[-1] if steps else None)

    def any_usable(self) -> bool:
        """Whether any panelist has an answer the next phase could use."""
        return any(s.value is not None for steps in self.answers.values() for s in steps)

    def render(self, spot: Spotlight, exclude: str | None = None) -> str:
        return "\n\n".join(_render(spot, m, self.latest(m.name)) for m in self.members
                           if m.name != exclude)


class PanelProtocol:
    mode = Mode.PANEL
    judging_phases = frozenset({SYNTHESIS, GRADING})
    panel_statistics = False
    final_steps = FinalSteps(keys=frozenset({SYNTHESIS_KEY, GRADE_KEY}))
    rounds = Rounds(noun="reflection rounds", most=MAX_REFLECTION_ROUNDS,
                    count=reflection_rounds)

    def plan(self, spec: PlanInput) -> Plan:
        members = panelists_for(spec.preset, spec.options, _plan_judges(spec))
        rounds, n = reflection_rounds(spec.rounds, spec.preset), len(members)
        calls = [PlannedCall(key=answer_key(r, m), role=m.role, phase=round_phase(r), depth=1 + r,
                             prompt_tokens=400 + (550 * n if r else 0)
                             + spec.carried(m.persona, untrusted=m.untrusted),
                             completion_tokens=550 if r else 450, model=m.model)
                 for r in range(rounds + 1) for m in members]
        calls.append(PlannedCall(key=SYNTHESIS_KEY, role="synthesizer",
                                 phase=SYNTHESIS, depth=rounds + 2,
                                 prompt_tokens=500 + 500 * n + spec.carried(),
                                 completion_tokens=650))
        if spec.options.ground_truth:
            truth = spec.carried(untrusted=(spec.options.ground_truth,), context=False)
            calls.append(PlannedCall(key=GRADE_KEY, role="judge", phase=GRADING,
                                     depth=rounds + 3, prompt_tokens=1400 + truth,
                                     completion_tokens=300))
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        options = ctx.request.options
        members = panelists_for(ctx.preset, options, ctx.request.judges)
        state = PanelState(members, {m.name: [] for m in members})
        rounds = reflection_rounds(ctx.request.rounds, ctx.preset)
        early_stop = stops_on_approval(ctx.preset, options)
        agreement: list[RoundAgreement] = []
        stopped = PanelStop.ROUND_LIMIT
        for r in range(rounds + 1):
            async with ctx.phase(round_phase(r)) as summary:
                steps = await _answer_round(ctx, state, r, rounds, summary)
            agreement.append(await _report_round(ctx, state.members, steps, r))
            if not state.any_usable():   # nothing to reflect on or distil: no call is spent
                later = [round_phase(k) for k in range(r + 1, rounds + 1)]
                return _nothing_answered(state, agreement, later, grading=bool(
                    options.ground_truth))
            if early_stop and agreement[-1].all_approve:
                stopped = PanelStop.ALL_APPROVED
                break
        async with ctx.phase(SYNTHESIS) as summary:
            synthesis = await _synthesise(ctx, state, agreement)
            note(summary, "synthesizer", synthesis, lambda v: v.conclusion)
        grade = None
        if options.ground_truth:
            async with ctx.phase(GRADING) as summary:
                grade = await _grade(ctx, synthesis, options.ground_truth)
                note(summary, "judge", grade, lambda v: f"accuracy {v.accuracy}/10")
        return _outcome(state, agreement, stopped, synthesis, grade)


async def _answer_round(ctx: DebateContext, state: PanelState, r: int, rounds: int,
                        summary: PhaseSummary) -> list[StepOutcome[Any]]:
    """Every panelist of round `r` in parallel; round 0 independent, later rounds reflective."""
    shared, spot = context_text(ctx), ctx.spotlight

    async def one(m: Panelist) -> StepOutcome[Any]:
        parts = [shared, *_own_material(spot, m)]
        schema: type[PanelAnswer] = PanelAnswer
        if r == 0:
            task = ANSWER_TASK
        else:
            parts.append("Your previous answer:\n" + _render(spot, m, state.latest(m.name)))
            parts.append("The other panelists' latest answers:\n"
                         + state.render(spot, exclude=m.name))
            task, schema = REFLECT_TASK.format(r=r, n=rounds), PanelReflection
        prompt = prompts.role(spot, m.persona + ", sitting on a panel of experts",
                              ctx.request.topic, task, "\n\n".join(p for p in parts if p))
        return await ctx.step(answer_key(r, m), role=m.role, prompt=prompt,
                              schema=schema, model=m.model)

    steps = list(await asyncio.gather(*(one(m) for m in state.members)))
    for m, step in zip(state.members, steps, strict=True):
        state.answers[m.name].append(step)
        note(summary, m.name, step, lambda v: v.summary)
    return steps


def _own_material(spot: Spotlight, m: Panelist) -> list[str]:
    """A panelist's own perspective (when the request named it) and context, spotlighted."""
    return [section(spot, "Your perspective:", [m.perspective] if m.perspective else []),
            section(spot, "Context given to you alone:", [m.context] if m.context else [])]


async def _report_round(ctx: DebateContext, members: list[Panelist],
                        steps: list[StepOutcome[Any]], r: int) -> RoundAgreement:
    """The round's agreement entry, also emitted as a ROUND_FINISHED event for the thread."""
    answered = [s.value for s in steps if s.value is not None]
    stances = [v.stance for v in answered]
    entry = RoundAgreement(
        round=r,
        agreement=stance_agreement(stances),
        mean_stance=round(sum(stances) / len(stances), 3) if stances else None,
        stance_spread=max(stances) - min(stances) if stances else None,
        approvals=sum(1 for v in answered if v.approve),
        answered=len(answered),
        all_approve=len(answered) == len(steps) and all(v.approve for v in answered),
    )
    positions = [
        {"panelist": m.name, "summary": s.value.summary, "stance": s.value.stance,
         "confidence": s.value.confidence, "approve": s.value.approve}
        if s.value is not None else {"panelist": m.name, "summary": s.missing_note(),
                                     "stance": None, "confidence": None, "approve": None}
        for m, s in zip(members, steps, strict=True)
    ]
    await ctx.emit(EventKind.ROUND_FINISHED, mode=FAMILY, round=r, positions=positions,
                   agreement=entry.agreement, all_approve=entry.all_approve)
    return entry


async def _synthesise(ctx: DebateContext, state: PanelState,
                      agreement: list[RoundAgreement]) -> StepOutcome[PanelSynthesis]:
    trend = ", ".join(f"round {a.round}: {a.agreement}" for a in agreement)
    parts = [context_text(ctx), "The panelists' final answers:\n" + state.render(ctx.spotlight),
             f"Stance agreement by round (1 = identical stances): {trend}"]
    prompt = prompts.role(ctx.spotlight, "the synthesizer of an expert panel, fair to every "
                          "panelist", ctx.request.topic, SYNTHESIS_TASK,
                          "\n\n".join(p for p in parts if p))
    return await ctx.step(SYNTHESIS_KEY, role="synthesizer", prompt=prompt,
                          schema=PanelSynthesis, temperature=0.3)


async def _grade(ctx: DebateContext, synthesis: StepOutcome[PanelSynthesis],
                 truth: str) -> StepOutcome[PanelGrade]:
    spot = ctx.spotlight
    answer = (quoted(spot, synthesis.value.answer) if synthesis.value is not None
              else synthesis.missing_note())
    reference = section(spot, "Reference answer:", [Untrusted(REFERENCE, truth)])
    context = f"{reference}\n\nAnswer to grade:\n{answer}"
    prompt = prompts.role(spot, "an exacting grader comparing an answer with a reference answer",
                          ctx.request.topic, GRADE_TASK, context)
    return await ctx.step(GRADE_KEY, role="judge", prompt=prompt, schema=PanelGrade,
                          temperature=0.2)


def _render(spot: Spotlight, m: Panelist, step: StepOutcome[Any] | None) -> str:
    """A panelist's answer as the others see it; what addresses the AI is spotlighted."""
    if step is None:
        return f"## {m.name}\n[no answer yet]"
    if step.value is None:
        return f"## {m.name}\n{step.missing_note()}"
    v = step.value
    verdict = "approves" if v.approve else "does not approve"
    lines = [f"## {m.name} (stance {v.stance}/10, confidence {v.confidence:.2f}, {verdict})",
             quoted(spot, v.answer)]
    lines += [f"- {quoted(spot, point)}" for point in v.key_points]
    return "\n".join(lines)


def _outcome(state: PanelState, agreement: list[RoundAgreement], stopped: PanelStop,
             synthesis: StepOutcome[PanelSynthesis],
             grade: StepOutcome[PanelGrade] | None) -> Outcome:
    out = Outcome()
    final = {m.name: state.latest(m.name) for m in state.members}
    out.outcome = PanelOutcome(
        panelists=[PanelistFinal(name=m.name, persona=m.perspective.text if m.perspective
                                 else m.persona, final=_value(final[m.name]))
                   for m in state.members],
        agreement_by_round=agreement, rounds_run=len(agreement) - 1, stopped_because=stopped,
        synthesis=synthesis.value, grade=grade.value if grade is not None else None,
    )
    out.missing += [f"panelist {name}: no usable answer in any round"
                    for name, s in final.items() if s is None or s.value is None]
    if grade is not None and grade.value is None:
        out.missing.append(f"grade against the ground truth ({grade.status})")
    if synthesis.value is None:
        out.verdict = "No synthesis: " + synthesis.missing_note()
        out.missing.append(f"synthesis ({synthesis.status})")
        return out
    out.verdict = synthesis.value.conclusion
    out.rationale = synthesis.value.rationale
    return out


def _nothing_answered(state: PanelState, agreement: list[RoundAgreement], later: list[str], *,
                      grading: bool) -> Outcome:
    """Every panelist failed: the phases that would only read their failures are skipped, and
    named, rather than paid for (a reflection on no answers, a synthesis of none)."""
    out = Outcome()
    out.outcome = PanelOutcome(
        panelists=[PanelistFinal(name=m.name, persona=m.perspective.text if m.perspective
                                 else m.persona, final=None) for m in state.members],
        agreement_by_round=agreement, rounds_run=len(agreement) - 1,
        stopped_because=PanelStop.NO_ANSWERS, synthesis=None, grade=None)
    reasons = sorted({s.missing_note() for steps in state.answers.values() for s in steps})
    out.missing += [f"panelist {m.name}: no usable answer in any round" for m in state.members]
    skipped = [*later, SYNTHESIS, *([GRADING] if grading else [])]
    out.missing.append(f"skipped, as no panelist answered: {', '.join(skipped)}")
    out.verdict = "No synthesis: no panelist answered (" + "; ".join(reasons)[:300] + ")"
    return out


def _value(step: StepOutcome[Any] | None) -> PanelAnswer | None:
    return step.value if step is not None else None
