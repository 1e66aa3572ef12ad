"""What every protocol (mode) provides: a plan for estimates and an async `run` over the context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.domain import ConsensusSummary, DivergenceSummary, Plan, TraceRow
from engine.outcomes import ModeOutcome
from engine.runner import DebateContext
from engine.settings import JudgeSpec, PresetSpec


@dataclass(slots=True)
class Outcome:
    """What a protocol concluded. Fields a mode does not produce stay empty."""

    verdict: str = ""
    winner: str | None = None
    rationale: str = ""
    consensus: ConsensusSummary | None = None
    divergence: DivergenceSummary = field(default_factory=DivergenceSummary)
    trace_table: list[TraceRow] = field(default_factory=list)
    outcome: ModeOutcome | None = None
    needs_review: bool = False          # e.g. redteam's consensus_reached == False
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlanInput:
    rounds: int
    judges: tuple[JudgeSpec, ...]
    preset: PresetSpec
    options: dict[str, Any]
    judges_requested: int | None = None   # request.judges, as asked (None: the preset's panel)


class DebateProtocol(Protocol):
    mode: str

    def plan(self, spec: PlanInput) -> Plan: ...

    async def run(self, ctx: DebateContext) -> Outcome: ...
