"""Replies of the `panel` mode: panelists' answers and reflections, the synthesis, the grade."""

from __future__ import annotations

from pydantic import Field

from engine.schemas.base import StrictReply


class PanelAnswer(StrictReply):
    """A panelist's answer, with the stance and approval the agreement and stop rules read."""

    summary: str = Field(min_length=1, max_length=300,
                         description="your position in one line")
    answer: str = Field(min_length=1, max_length=3000)
    key_points: list[str] = Field(min_length=1, max_length=5)
    stance: int = Field(ge=1, le=10, description="how strongly you endorse the proposition")
    confidence: float = Field(ge=0, le=1)
    approve: bool = Field(description="you approve the proposal as it stands")


class PanelReflection(PanelAnswer):
    """A reflection round's answer: the critique of the others, then the refined answer."""

    critique: str = Field(min_length=1, max_length=1500)
    changed: str = Field(max_length=600, description="what changed in your answer and why")


class PanelSynthesis(StrictReply):
    conclusion: str = Field(min_length=1, max_length=400)
    answer: str = Field(min_length=1, max_length=4000)
    agreements: list[str] = Field(max_length=6)
    disagreements: list[str] = Field(max_length=6)
    rationale: str = Field(min_length=1, max_length=1500)
    confidence: float = Field(ge=0, le=1)


class PanelGrade(StrictReply):
    accuracy: int = Field(ge=1, le=10)
    completeness: int = Field(ge=1, le=10)
    missing_points: list[str] = Field(max_length=10)
    rationale: str = Field(min_length=1, max_length=1500)
