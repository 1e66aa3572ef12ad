"""Replies of the pro/con family (simple, structured, consensus): what each side says, and what
the judges return."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply, score, unit

Label = Literal["A", "B", "tie"]


class Claim(StrictReply):
    claim: str = Field(min_length=1)
    evidence: str


class Position(StrictReply):
    """An opening: the side's thesis and its numbered claims."""

    summary: str = Field(min_length=1)
    claims: list[Claim] = Field(min_length=1)


class Response(StrictReply):
    target: str = Field(description="id of the opposing claim answered, e.g. C2")
    response: str = Field(min_length=1)


class Rebuttal(StrictReply):
    summary: str = Field(min_length=1)
    responses: list[Response]
    new_claims: list[Claim]


class Challenge(StrictReply):
    target: str = Field(description="id of the opposing claim challenged, e.g. P1")
    question: str = Field(min_length=1)
    challenge: str = Field(min_length=1)


class CrossExamination(StrictReply):
    summary: str = Field(min_length=1)
    challenges: list[Challenge] = Field(min_length=1)


class Answer(StrictReply):
    claim: str = Field(description="id of your own claim that was challenged, e.g. P1")
    response: str = Field(min_length=1)
    conceded: bool


class Closing(StrictReply):
    summary: str = Field(min_length=1)
    answers: list[Answer]
    final_claim: str = Field(min_length=1)


class RubricScores(StrictReply):
    logic: int = score()
    evidence: int = score()
    rebuttal: int = score()
    clarity: int = score()
    relevance: int = score()


DIMENSIONS: tuple[str, ...] = ("logic", "evidence", "rebuttal", "clarity", "relevance")


class ClaimAssessment(StrictReply):
    id: str
    strength: int = score()
    rebutted: bool
    standing: Literal["stands", "weakened", "refuted"]


class Scorecard(StrictReply):
    """A judge's scoring of both (neutrally labelled) positions and of every claim."""

    position_a: RubricScores
    position_b: RubricScores
    claims: list[ClaimAssessment]
    winner: Label
    rationale: str = Field(min_length=1)


class Verdict(StrictReply):
    winner: Label
    rationale: str = Field(min_length=1)
    confidence: float = unit()
