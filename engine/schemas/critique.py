"""Replies of the `critique` mode: proposals, the critic's review, convergence, the final answer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply

Severity = Literal["low", "medium", "high"]


class Proposal(StrictReply):
    summary: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    key_points: list[str] = Field(min_length=1)
    changes: list[str]


class Objection(StrictReply):
    point: str = Field(min_length=1)
    severity: Severity


class CritiqueReview(StrictReply):
    """The critic's review of the latest proposal; `satisfied` is the structured stop signal."""

    summary: str = Field(min_length=1)
    objections: list[Objection]
    missing_cases: list[str]
    severity: Severity
    satisfied: bool


class Convergence(StrictReply):
    converged: bool
    rationale: str = Field(min_length=1)


class FinalAnswer(StrictReply):
    summary: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    key_points: list[str] = Field(min_length=1)
    open_issues: list[str]
