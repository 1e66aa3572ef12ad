"""`redteam` (analyse, propose, challenge, synthesise): an analyst extracts the key metrics and
factors, a strategist proposes an action, a red team attacks it, the strategist revises, and a
synthesizer decides, with mitigation steps, execution parameters and a `consensus_reached` flag.
Each role has its own temperature (cool analysis and decision, hot red team). Every call needs the
one before it, so the critical path is all 5 calls.

`consensus_reached` false (or no decision at all) sets `needs_review`, which routes the result to a
human the way a low alpha does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from engine.core import prompts
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import Plan, PlannedCall
from engine.protocols.base import FinalSteps, Outcome, PlanInput
from engine.protocols.procon import context_text, note
from engine.reading.outcomes import RedTeamOutcome
from engine.schemas.redteam import (
    Analysis,
    Decision,
    RedTeamChallenge,
    Revision,
    StrategyProposal,
)
from engine.untrusted.material import quoted
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import Mode

FAMILY = Mode.REDTEAM.value      # the prefix of its step keys
TEMPERATURES: dict[str, float] = {
    "analyst": 0.2, "strategist": 0.7, "redteam": 0.9, "synthesizer": 0.3,
}




@dataclass(frozen=True, slots=True)
class Stage:
    """One step of the chain: `name` is its phase and the tail of its step key."""

    name: str
    role: str
    persona: str
    task: str
    schema: type[BaseModel]

    @property
    def key(self) -> str:
        return f"{FAMILY}/{self.name}"


SYNTHESIS = "synthesis"
# In order; each step reads all before it.
STAGES: tuple[Stage, ...] = tuple(Stage(*fields) for fields in (
    ("analysis", "analyst", "a quantitative analyst, precise and sober",
     "Extract the key metrics (name and value) and the factors that bear on the question (does "
     "each support or oppose acting, and its weight 1-10), with a summary and your confidence "
     "from 0 to 1. At most eight metrics and eight factors, one line each; the summary under 100 "
     "words.", Analysis),
    ("proposal", "strategist", "a strategist who turns analysis into action",
     "Propose one concrete action, with its rationale, the outcome you expect and your "
     "confidence from 0 to 1. The action in one or two sentences, the rationale under 150 "
     "words.", StrategyProposal),
    ("challenge", "redteam", "the red team, paid to find what breaks the plan",
     "Attack the proposal: list its risks (likelihood and impact low/medium/high), the strongest "
     "counter-arguments, the overall severity, and a one-line summary. At most eight risks and "
     "six counter-arguments, one or two sentences each.", RedTeamChallenge),
    ("revision", "strategist", "a strategist who turns analysis into action",
     "Revise your proposal in the light of the red team's challenge: the revised action, "
     "rationale, expected outcome and confidence, what you changed, and which risks you accept "
     "and why. The rationale under 150 words; one sentence per change or accepted risk.",
     Revision),
    (SYNTHESIS, "synthesizer", "the synthesizer who makes the final call",
     "Decide: the final decision and its rationale, the mitigation steps, the execution "
     "parameters (name and value), your confidence from 0 to 1, and whether consensus was "
     "reached (true only if the revised plan answers the red team's serious risks). The "
     "rationale under 150 words; at most eight mitigation steps, one sentence each.", Decision),
))


class RedTeamProtocol:
    mode = Mode.REDTEAM
    judging_phases = frozenset({SYNTHESIS})
    panel_statistics = False
    final_steps = FinalSteps(keys=frozenset({f"{FAMILY}/{SYNTHESIS}"}))
    rounds = None   # one fixed chain of five steps: nothing repeats

    def plan(self, spec: PlanInput) -> Plan:
        calls = [PlannedCall(key=stage.key, role=stage.role, phase=stage.name, depth=depth,
                             prompt_tokens=400 + 500 * (depth - 1) + spec.carried(stage.persona),
                             completion_tokens=500)
                 for depth, stage in enumerate(STAGES, start=1)]
        return Plan(mode=self.mode, calls=tuple(calls))

    async def run(self, ctx: DebateContext) -> Outcome:
        done: list[tuple[str, StepOutcome[Any]]] = []
        for stage in STAGES:
            async with ctx.phase(stage.name) as summary:
                context = "\n\n".join(p for p in (context_text(ctx),
                                                   _render(ctx.spotlight, done)) if p)
                prompt = prompts.role(ctx.spotlight, stage.persona, ctx.request.topic,
                                      stage.task, context)
                step = await ctx.step(stage.key, role=stage.role, prompt=prompt,
                                      schema=stage.schema, temperature=TEMPERATURES[stage.role])
                note(summary, stage.role, step, _highlight)
            done.append((stage.name, step))
            if stage.name == "proposal" and step.value is None:   # nothing to challenge
                return _no_proposal(dict(done))
        return _outcome(dict(done))


def _highlight(value: BaseModel) -> str:
    for name in ("decision", "action", "summary"):
        if hasattr(value, name):
            return str(getattr(value, name))
    return ""


def _render(spot: Spotlight, done: list[tuple[str, StepOutcome[Any]]]) -> str:
    """The work so far, each stage under its own heading; missing stages as marked notes; what
    addresses the AI is spotlighted."""
    parts = []
    for key, step in done:
        body = step.missing_note() if step.value is None else _lines(spot, step.value)
        parts.append(f"## {key.capitalize()}\n{body}")
    return "\n\n".join(parts)


def _lines(spot: Spotlight, value: BaseModel) -> str:
    lines = []
    for name, item in value.model_dump(mode="json").items():
        if isinstance(item, list):
            lines.append(f"{name}:")
            lines += [f"- {_flat(spot, i)}" for i in item]
        else:
            lines.append(f"{name}: {_flat(spot, item)}")
    return "\n".join(lines)


def _flat(spot: Spotlight, item: Any) -> str:
    if isinstance(item, dict):
        return "; ".join(f"{k}: {_flat(spot, v)}" for k, v in item.items())
    return quoted(spot, item) if isinstance(item, str) else str(item)


def _no_proposal(steps: dict[str, StepOutcome[Any]]) -> Outcome:
    """No proposal: the challenge, the revision and the synthesis would read only its failure,
    so they are skipped, and named."""
    out = Outcome(outcome=RedTeamOutcome(
        analysis=steps["analysis"].value, proposal=None, challenge=None, revision=None,
        synthesis=None, severity=None, consensus_reached=None), needs_review=True)
    out.verdict = ("No decision: the strategist made no proposal ("
                   + steps["proposal"].missing_note()[:300] + ")")
    later = [stage.name for stage in STAGES[2:]]
    out.missing.append(f"skipped, as there was no proposal to challenge: {', '.join(later)}")
    return out


def _outcome(steps: dict[str, StepOutcome[Any]]) -> Outcome:
    challenge = steps["challenge"].value
    synthesis = steps[SYNTHESIS]
    decision = synthesis.value
    out = Outcome(outcome=RedTeamOutcome(
        analysis=steps["analysis"].value, proposal=steps["proposal"].value,
        challenge=challenge, revision=steps["revision"].value, synthesis=decision,
        severity=challenge.severity if challenge is not None else None,
        consensus_reached=decision.consensus_reached if decision is not None else None,
    ))
    if decision is None:
        out.verdict = "No decision: " + synthesis.missing_note()
        out.missing.append(f"decision ({synthesis.status})")
        out.needs_review = True
        return out
    out.needs_review = not decision.consensus_reached
    out.rationale = decision.rationale
    flag = "consensus reached" if decision.consensus_reached else "no consensus: needs review"
    out.verdict = f"{decision.decision} ({flag})"
    return out
