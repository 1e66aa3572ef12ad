"""What each mode ends with beyond the verdict: one typed model per mode, told apart by `mode`
(a discriminated union), stored with the result, served by the API and listed by the surfaces.

Results stored before outcomes were typed hold the same fields without `mode` (and `{}` when there
was none); `DebateResult` fills the tag in from the result's own mode as it loads them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schemas.critique import FinalAnswer, Proposal, Severity
from engine.schemas.panel import PanelAnswer, PanelGrade, PanelReflection, PanelSynthesis
from engine.schemas.procon import RubricScores
from engine.schemas.redteam import (
    Analysis,
    ChallengeSeverity,
    Decision,
    RedTeamChallenge,
    Revision,
    StrategyProposal,
)
from engine.vocabulary import Mode, Side

#: How the panel's agreement per round is measured (see engine/protocols/panel.py).
STANCE_AGREEMENT = "stance: 1 - population sd / 4.5"


class _Outcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    def details(self) -> dict[str, Any]:
        """The outcome's fields as JSON values, by name, without the tag: what surfaces list."""
        return self.model_dump(mode="json", exclude={"mode"})


class SimpleOutcome(_Outcome):
    mode: Literal[Mode.SIMPLE] = Mode.SIMPLE
    confidence: float = Field(ge=0, le=1, description="the judge's confidence in its verdict")


class StructuredOutcome(_Outcome):
    mode: Literal[Mode.STRUCTURED] = Mode.STRUCTURED
    rubric: dict[Side, RubricScores] = Field(description="the rubric judge's scores per side")


class ConsensusOutcome(_Outcome):
    """The panel's statistics live in `DebateResult.consensus` and `.divergence`; the outcome
    only marks that the consensus mode concluded."""

    mode: Literal[Mode.CONSENSUS] = Mode.CONSENSUS


class PanelStop(StrEnum):
    """Why the panel's reflection ended."""

    ROUND_LIMIT = "round_limit"
    ALL_APPROVED = "all_approved"
    NO_ANSWERS = "no_answers"      # no panelist had a usable answer: nothing to reflect on


class RoundAgreement(BaseModel):
    """How far the panel agreed after one round (round 0: the independent answers)."""

    model_config = ConfigDict(frozen=True)
    round: int
    agreement: float | None
    mean_stance: float | None
    stance_spread: int | None
    approvals: int
    answered: int
    all_approve: bool


class PanelistFinal(BaseModel):
    """A panelist and its latest usable answer (None: it never gave one)."""

    model_config = ConfigDict(frozen=True)
    name: str
    persona: str
    final: PanelReflection | PanelAnswer | None


class PanelOutcome(_Outcome):
    mode: Literal[Mode.PANEL] = Mode.PANEL
    panelists: list[PanelistFinal]
    agreement_by_round: list[RoundAgreement]
    agreement_measure: str = STANCE_AGREEMENT
    rounds_run: int
    stopped_because: PanelStop
    synthesis: PanelSynthesis | None
    grade: PanelGrade | None = None   # only with a ground truth to grade against

    def details(self) -> dict[str, Any]:
        found = super().details()
        if self.grade is None:
            del found["grade"]
        return found


class CritiqueStop(StrEnum):
    """Why the critique exchange ended."""

    CRITIC_SATISFIED = "critic_satisfied"
    CONVERGED = "converged"
    ROUND_LIMIT = "round_limit"
    NO_PROPOSAL = "no_proposal"    # the proposer never answered: nothing to critique


class CritiqueRound(BaseModel):
    """One critique round as the critic (and the convergence judge) left it; None: missing."""

    model_config = ConfigDict(frozen=True)
    round: int
    satisfied: bool | None
    severity: Severity | None
    objections: int | None
    converged: bool | None


class CritiqueOutcome(_Outcome):
    mode: Literal[Mode.CRITIQUE] = Mode.CRITIQUE
    stopped_because: CritiqueStop
    rounds_run: int
    round_limit: int
    rounds: list[CritiqueRound]
    final: FinalAnswer | None
    latest_proposal: Proposal | None


class RedTeamOutcome(_Outcome):
    """Every stage's output (None: degraded or filtered), the challenge's severity and whether the
    synthesizer found consensus (None: no decision)."""

    mode: Literal[Mode.REDTEAM] = Mode.REDTEAM
    analysis: Analysis | None
    proposal: StrategyProposal | None
    challenge: RedTeamChallenge | None
    revision: Revision | None
    synthesis: Decision | None
    severity: ChallengeSeverity | None
    consensus_reached: bool | None

    @property
    def mitigations(self) -> list[str]:
        return list(self.synthesis.mitigation_steps) if self.synthesis is not None else []


ModeOutcome = Annotated[
    SimpleOutcome | StructuredOutcome | ConsensusOutcome | PanelOutcome | CritiqueOutcome
    | RedTeamOutcome,
    Field(discriminator="mode"),
]


def legacy_outcome(outcome: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """A stored outcome as the union reads it: `{}` is no outcome, a missing tag is the mode's."""
    if not outcome:
        return None
    return outcome if "mode" in outcome else {**outcome, "mode": mode}


__all__ = [
    "STANCE_AGREEMENT",
    "ConsensusOutcome",
    "CritiqueOutcome",
    "CritiqueRound",
    "CritiqueStop",
    "ModeOutcome",
    "PanelOutcome",
    "PanelStop",
    "PanelistFinal",
    "RedTeamOutcome",
    "RoundAgreement",
    "SimpleOutcome",
    "StructuredOutcome",
    "legacy_outcome",
]
