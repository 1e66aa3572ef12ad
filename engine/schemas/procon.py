"""Replies of the pro/con family (simple, structured, consensus): what each side says, and what
the judges return."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply

Label = Literal["A", "B", "tie"]


class Claim(StrictReply):
    claim: str = Field(min_length=1, max_length=600)
    evidence: str = Field(max_length=800)


class Position(StrictReply):
    """An opening: the side's thesis and its numbered claims."""

    summary: str = Field(min_length=1, max_length=1200)
    claims: list[Claim] = Field(min_length=1, max_length=5)


class Response(StrictReply):
    target: str = Field(description="id of the opposing claim answered, e.g. C2")
    response: str = Field(min_length=1, max_length=800)


class Rebuttal(StrictReply):
    summary: str = Field(min_length=1, max_length=1200)
    responses: list[Response] = Field(max_length=5)
    new_claims: list[Claim] = Field(max_length=3)


class Challenge(StrictReply):
    target: str = Field(description="id of the opposing claim challenged, e.g. P1")
    question: str = Field(min_length=1, max_length=500)
    challenge: str = Field(min_length=1, max_length=800)


class CrossExamination(StrictReply):
    summary: str = Field(min_length=1, max_length=1000)
    challenges: list[Challenge] = Field(min_length=1, max_length=5)


class Answer(StrictReply):
    claim: str = Field(description="id of your own claim that was challenged, e.g. P1")
    response: str = Field(min_length=1, max_length=800)
    conceded: bool


class Closing(StrictReply):
    summary: str = Field(min_length=1, max_length=1200)
    answers: list[Answer] = Field(max_length=5)
    final_claim: str = Field(min_length=1, max_length=600)


class RubricScores(StrictReply):
    logic: int = Field(ge=1, le=10)
    evidence: int = Field(ge=1, le=10)
    rebuttal: int = Field(ge=1, le=10)
    clarity: int = Field(ge=1, le=10)
    relevance: int = Field(ge=1, le=10)


DIMENSIONS: tuple[str, ...] = ("logic", "evidence", "rebuttal", "clarity", "relevance")


class ClaimAssessment(StrictReply):
    id: str
    strength: int = Field(ge=1, le=10)
    rebutted: bool
    standing: Literal["stands", "weakened", "refuted"]


class Scorecard(StrictReply):
    """A judge's scoring of both (neutrally labelled) positions and of every claim."""

    position_a: RubricScores
    position_b: RubricScores
    claims: list[ClaimAssessment] = Field(max_length=20)
    winner: Label
    rationale: str = Field(min_length=1, max_length=1500)


class Verdict(StrictReply):
    winner: Label
    rationale: str = Field(min_length=1, max_length=1500)
    confidence: float = Field(ge=0, le=1)
