"""Replies of the `critique` mode: proposals, the critic's review, convergence, the final answer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply

Severity = Literal["low", "medium", "high"]


class Proposal(StrictReply):
    summary: str = Field(min_length=1, max_length=300)
    answer: str = Field(min_length=1, max_length=4000)
    key_points: list[str] = Field(min_length=1, max_length=6)
    changes: list[str] = Field(max_length=8)


class Objection(StrictReply):
    point: str = Field(min_length=1, max_length=600)
    severity: Severity


class CritiqueReview(StrictReply):
    """The critic's review of the latest proposal; `satisfied` is the structured stop signal."""

    summary: str = Field(min_length=1, max_length=400)
    objections: list[Objection] = Field(max_length=8)
    missing_cases: list[str] = Field(max_length=8)
    severity: Severity
    satisfied: bool


class Convergence(StrictReply):
    converged: bool
    rationale: str = Field(min_length=1, max_length=800)


class FinalAnswer(StrictReply):
    summary: str = Field(min_length=1, max_length=400)
    answer: str = Field(min_length=1, max_length=4000)
    key_points: list[str] = Field(min_length=1, max_length=8)
    open_issues: list[str] = Field(max_length=8)
