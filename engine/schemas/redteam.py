"""Replies of the `redteam` mode: analysis, proposal, challenge, revision and the decision."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply

Level = Literal["low", "medium", "high"]
ChallengeSeverity = Literal["low", "medium", "high", "critical"]


class Metric(StrictReply):
    name: str = Field(min_length=1, max_length=120)
    value: str = Field(min_length=1, max_length=200)


class Factor(StrictReply):
    factor: str = Field(min_length=1, max_length=400)
    effect: Literal["supports", "opposes", "uncertain"]
    weight: int = Field(ge=1, le=10)


class Analysis(StrictReply):
    summary: str = Field(min_length=1, max_length=1200)
    metrics: list[Metric] = Field(min_length=1, max_length=8)
    factors: list[Factor] = Field(min_length=1, max_length=8)
    confidence: float = Field(ge=0, le=1)


class StrategyProposal(StrictReply):
    action: str = Field(min_length=1, max_length=600)
    rationale: str = Field(min_length=1, max_length=1500)
    expected_outcome: str = Field(min_length=1, max_length=800)
    confidence: float = Field(ge=0, le=1)


class Risk(StrictReply):
    risk: str = Field(min_length=1, max_length=500)
    likelihood: Level
    impact: Level


class RedTeamChallenge(StrictReply):
    summary: str = Field(min_length=1, max_length=800)
    risks: list[Risk] = Field(min_length=1, max_length=8)
    counter_arguments: list[str] = Field(min_length=1, max_length=6)
    severity: ChallengeSeverity


class Revision(StrategyProposal):
    """The strategist's revised proposal: what it changed, and which risks it accepts."""

    changes: list[str] = Field(max_length=8)
    accepted_risks: list[str] = Field(max_length=8)


class Parameter(StrictReply):
    name: str = Field(min_length=1, max_length=120)
    value: str = Field(min_length=1, max_length=200)


class Decision(StrictReply):
    decision: str = Field(min_length=1, max_length=600)
    rationale: str = Field(min_length=1, max_length=1500)
    mitigation_steps: list[str] = Field(max_length=8)
    execution_parameters: list[Parameter] = Field(max_length=10)
    consensus_reached: bool = Field(description="strategist and red team can live with it")
    confidence: float = Field(ge=0, le=1)
