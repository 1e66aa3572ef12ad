"""Replies of the `redteam` mode: analysis, proposal, challenge, revision and the decision."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.schemas.base import StrictReply, score, unit

Level = Literal["low", "medium", "high"]
ChallengeSeverity = Literal["low", "medium", "high", "critical"]


class Metric(StrictReply):
    name: str = Field(min_length=1)
    value: str = Field(min_length=1)


class Factor(StrictReply):
    factor: str = Field(min_length=1)
    effect: Literal["supports", "opposes", "uncertain"]
    weight: int = score()


class Analysis(StrictReply):
    summary: str = Field(min_length=1)
    metrics: list[Metric] = Field(min_length=1)
    factors: list[Factor] = Field(min_length=1)
    confidence: float = unit()


class StrategyProposal(StrictReply):
    action: str = Field(min_length=1)
    rationale: str = Field(min_length=1)
    expected_outcome: str = Field(min_length=1)
    confidence: float = unit()


class Risk(StrictReply):
    risk: str = Field(min_length=1)
    likelihood: Level
    impact: Level


class RedTeamChallenge(StrictReply):
    summary: str = Field(min_length=1)
    risks: list[Risk] = Field(min_length=1)
    counter_arguments: list[str] = Field(min_length=1)
    severity: ChallengeSeverity


class Revision(StrategyProposal):
    """The strategist's revised proposal: what it changed, and which risks it accepts."""

    changes: list[str]
    accepted_risks: list[str]


class Parameter(StrictReply):
    name: str = Field(min_length=1)
    value: str = Field(min_length=1)


class Decision(StrictReply):
    decision: str = Field(min_length=1)
    rationale: str = Field(min_length=1)
    mitigation_steps: list[str]
    execution_parameters: list[Parameter]
    consensus_reached: bool = Field(description="strategist and red team can live with it")
    confidence: float = unit()
