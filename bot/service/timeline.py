"""A debate as it unfolds, for pages that follow it live: the shared progress fold (phases,
cost) plus what each finished phase said, each judge's card as it lands, each round's agreement,
the panel's statistics and the evidence people added. Folded from the audit chain, so a page
rendered at any moment (or re-rendered on every SSE event) shows what happened so far.

Pure, except `load_timeline`, which reads the chain and the steps' models from storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.service.progress import PhaseView, Progress, progress_for
from engine.domain import EventKind
from engine.settings import EngineSettings
from storage import audit, steps
from storage.db import Database
from storage.records import AuditEvent, DebateRecord

MAX_EVENTS = 5000     # a debate's chain is a few hundred links; this bounds a hostile one


@dataclass(frozen=True, slots=True)
class JudgeCard:
    """One judge's scorecard as it was reported: the winner and rubric per side."""

    name: str
    winner: str | None
    rubric: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class PhaseSaid:
    """What a finished phase said: each side's (or role's) strongest point, and how long."""

    highlights: dict[str, str]
    elapsed_seconds: float


@dataclass(slots=True)
class Timeline:
    """The fold. `apply` takes one audit link; the fields read it."""

    progress: Progress
    said: dict[str, PhaseSaid] = field(default_factory=dict)
    judges: dict[str, JudgeCard] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    consensus: dict[str, Any] | None = None
    evidence: list[tuple[str, str]] = field(default_factory=list)
    started_at: datetime | None = None
    last_at: datetime | None = None
    last_seq: int = 0
    models: dict[str, str] = field(default_factory=dict)   # role -> the model that answered

    def apply(self, event: AuditEvent) -> None:
        self.last_seq = max(self.last_seq, event.seq)
        self.last_at = event.at
        if event.kind == EventKind.DEBATE_STARTED and self.started_at is None:
            self.started_at = event.at
        self.progress.apply(event.kind, event.data)
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event.data)

    def phases(self) -> list[tuple[PhaseView, PhaseSaid | None]]:
        """Every phase (planned or run) with what it said once finished."""
        return [(view, self.said.get(view.name)) for view in self.progress.phases()]

    @property
    def elapsed_seconds(self) -> float:
        if self.started_at is None or self.last_at is None:
            return 0.0
        return max((self.last_at - self.started_at).total_seconds(), 0.0)

    def judge_model(self, judge: str) -> str:
        return self.models.get(f"judge/{judge}", "")

    def _phase_finished(self, data: Mapping[str, Any]) -> None:
        highlights = data.get("highlights")
        self.said[str(data.get("phase") or "")] = PhaseSaid(
            {str(k): str(v) for k, v in (highlights or {}).items()} if isinstance(
                highlights, dict) else {},
            _number(data.get("elapsed_seconds")))

    def _judge_scored(self, data: Mapping[str, Any]) -> None:
        name = str(data.get("judge") or "?")
        rubric = data.get("rubric") if isinstance(data.get("rubric"), dict) else {}
        self.judges[name] = JudgeCard(name, _text(data.get("winner")), {
            str(side): {str(k): int(v) for k, v in dims.items() if isinstance(v, int | float)}
            for side, dims in (rubric or {}).items() if isinstance(dims, dict)})

    def _round_finished(self, data: Mapping[str, Any]) -> None:
        self.rounds.append(dict(data))

    def _consensus_computed(self, data: Mapping[str, Any]) -> None:
        self.consensus = dict(data)

    def _evidence_added(self, data: Mapping[str, Any]) -> None:
        self.evidence.append((str(data.get("author") or ""), str(data.get("text") or "")))


_HANDLERS = {
    EventKind.PHASE_FINISHED.value: Timeline._phase_finished,
    EventKind.JUDGE_SCORED.value: Timeline._judge_scored,
    EventKind.ROUND_FINISHED.value: Timeline._round_finished,
    EventKind.CONSENSUS_COMPUTED.value: Timeline._consensus_computed,
    EventKind.EVIDENCE_ADDED.value: Timeline._evidence_added,
}


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def timeline_of(engine: EngineSettings, record: DebateRecord, events: Iterable[AuditEvent],
                models: Mapping[str, str] | None = None) -> Timeline:
    """The fold over a debate's events (oldest first), starting from its plan."""
    timeline = Timeline(progress_for(engine, record.request), models=dict(models or {}))
    for event in events:
        timeline.apply(event)
    return timeline


async def load_timeline(engine: EngineSettings, db: Database, record: DebateRecord
                        ) -> Timeline:
    """The debate's timeline from its audit chain and the models its steps used."""
    async with db.transaction(readonly=True) as session:
        events = await audit.events(session, record.id, limit=MAX_EVENTS)
        models = {s.role: s.model for s in await steps.list_steps(session, record.id)}
    return timeline_of(engine, record, events, models)


__all__ = ["JudgeCard", "PhaseSaid", "Timeline", "load_timeline", "timeline_of"]
