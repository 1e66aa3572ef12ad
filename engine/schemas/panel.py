"""Replies of the `panel` mode: panelists' answers and reflections, the synthesis, the grade."""

from __future__ import annotations

from pydantic import Field

from engine.schemas.base import StrictReply, score, unit


class PanelAnswer(StrictReply):
    """A panelist's answer, with the stance and approval the agreement and stop rules read."""

    summary: str = Field(min_length=1,
                         description="your position in one line")
    answer: str = Field(min_length=1)
    key_points: list[str] = Field(min_length=1)
    stance: int = score("how strongly you endorse the proposition, 1 reject, 10 fully endorse")
    confidence: float = unit()
    approve: bool = Field(description="you approve the proposal as it stands")


class PanelReflection(PanelAnswer):
    """A reflection round's answer: the critique of the others, then the refined answer."""

    critique: str = Field(min_length=1)
    changed: str = Field(description="what changed in your answer and why")


class PanelSynthesis(StrictReply):
    conclusion: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    agreements: list[str]
    disagreements: list[str]
    rationale: str = Field(min_length=1)
    confidence: float = unit()


class PanelGrade(StrictReply):
    accuracy: int = score()
    completeness: int = score()
    missing_points: list[str]
    rationale: str = Field(min_length=1)
