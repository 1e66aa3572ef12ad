"""The service's records around a debate: its lifecycle, where it came from, its reviews and
its audit events. Storage persists them and returns them; the service and the surfaces read them.
The debate's own types (request, result, events, steps) are the engine's (engine/domain.py).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.domain import DebateRequest, DebateResult, utcnow
from engine.oversight.panel_records import Side as PanelSide
from engine.settings import ThresholdSpec
from engine.untrusted.injection import Finding

# defined in storage/lifecycle.py (light: the command line's grammar reads it), used from here
from storage.lifecycle import DebateStatus as DebateStatus


class RunStatus(StrEnum):
    """How a scheduled slot's run ended (scheduled_runs.status)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    MISSED = "missed"            # due while nothing ran; reported in the next digest, never run
    PAUSED = "paused"            # the schedule was paused at its time
    INTERRUPTED = "interrupted"  # the process stopped while it ran
    SKIPPED = "skipped"          # not run: its workspace is not installed (the reason is kept)


class BriefStatus(StrEnum):
    """A pre-meeting brief's life (briefs.status)."""

    PENDING = "pending"
    RUNNING = "running"
    POSTED = "posted"
    READY = "ready"              # prepared, but could not be posted (Slack off or refused)
    FAILED = "failed"
    MISSED = "missed"            # could not be prepared before the meeting


TERMINAL_STATUSES = frozenset(
    {DebateStatus.COMPLETED, DebateStatus.FAILED, DebateStatus.TIMED_OUT,
     DebateStatus.APPROVED, DebateStatus.ESCALATED}
)


ALLOWED_TRANSITIONS: dict[DebateStatus, frozenset[DebateStatus]] = {
    DebateStatus.CREATED: frozenset({DebateStatus.QUEUED, DebateStatus.FAILED}),
    DebateStatus.QUEUED: frozenset({DebateStatus.DEBATING, DebateStatus.FAILED}),
    DebateStatus.DEBATING: frozenset({
        DebateStatus.JUDGING, DebateStatus.COMPLETED, DebateStatus.FAILED,
        DebateStatus.TIMED_OUT, DebateStatus.QUEUED, DebateStatus.AWAITING_REVIEW}),
    DebateStatus.JUDGING: frozenset({
        DebateStatus.COMPLETED, DebateStatus.FAILED, DebateStatus.TIMED_OUT,
        DebateStatus.QUEUED, DebateStatus.AWAITING_REVIEW}),
    # A published result a reviewer spot-checks is upheld (approved) or overturned (escalated)
    # without ever waiting: it was out already.
    DebateStatus.COMPLETED: frozenset({DebateStatus.AWAITING_REVIEW, DebateStatus.APPROVED,
                                       DebateStatus.ESCALATED}),
    DebateStatus.FAILED: frozenset({DebateStatus.QUEUED}),
    DebateStatus.TIMED_OUT: frozenset({DebateStatus.QUEUED, DebateStatus.AWAITING_REVIEW}),
    DebateStatus.AWAITING_REVIEW: frozenset({DebateStatus.APPROVED, DebateStatus.ESCALATED}),
    DebateStatus.APPROVED: frozenset(),
    DebateStatus.ESCALATED: frozenset(),
}


def can_transition(current: DebateStatus, target: DebateStatus) -> bool:
    return target in ALLOWED_TRANSITIONS[current]


#: The doors a debate comes in by: Slack, the REST API and console, the terminal, a schedule, a
#: replay, an evaluation, an AI assistant over MCP (`dialectic mcp`).
Surface = Literal["slack", "api", "cli", "schedule", "replay", "eval", "terminal", "mcp"]


class Origin(BaseModel):
    """Where a debate came from and where its updates go (Slack, API, CLI, a schedule, MCP)."""

    model_config = ConfigDict(frozen=True)
    #: "cli": asked for from a shell, run by the service's workers (a re-run, a replay);
    #: "terminal": `dialectic run`, run in the terminal that asked for it; "mcp": an AI
    #: assistant, through `dialectic mcp` or `/mcp`
    surface: Surface = "api"
    team_id: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None
    status_ts: str | None = None      # the status message kept current with chat.update
    stream_ts: str | None = None      # the plan streamed in its thread (chat.startStream)
    user_id: str | None = None
    schedule_id: str | None = None
    response_url: str | None = None
    # W3C trace context (docs/tracing.md): the span that queued it, and the worker's span of
    # its latest attempt (a resumed attempt links to it); None when tracing is off
    traceparent: str | None = None
    attempt_traceparent: str | None = None
    # an evaluation's debate (`dialectic eval`): the run it belongs to, and whether that run
    # asked for its debates to count in oversight (`eval --review`); see `in_oversight`
    evaluation_id: str | None = None
    evaluation_review: bool = False

    @property
    def in_oversight(self) -> bool:
        """Whether the debate counts in the human review queue, the judge audit, routing
        statistics, threshold suggestions, feedback agreement and judge calibration. An
        evaluation's debates keep their own books (docs/evaluation.md) unless its run asked
        (`eval --review`). storage/debates.py `in_oversight` says the same in SQL."""
        return self.surface != "eval" or self.evaluation_review


class DebateRecord(BaseModel):
    """A debate as the service knows it: request, lifecycle, money, result."""

    id: str
    request: DebateRequest
    mode: str
    preset: str
    status: DebateStatus
    origin: Origin = Origin()
    requested_by: str = ""
    estimate_usd: float = 0.0
    reserved_usd: float = 0.0
    cost_usd: float = 0.0
    result: DebateResult | None = None
    error: str = ""
    attempts: int = 0
    parent_id: str | None = None            # replay or re-run: the debate this one came from
    reused_steps: tuple[str, ...] = ()      # replay: the parent's steps read, not called again
    cached_from: str | None = None          # a cache hit: the debate whose result this reuses
    downgraded_from: str | None = None      # budget: the mode first asked for
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # text addressed to the AI found in its untrusted material (at submit, as evidence arrived,
    # in its models' outputs): the debate is flagged, shown as such and never auto-approved
    injection: list[Finding] = Field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.injection)


class ReviewStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    ESCALATED = "escalated"
    RERUN = "rerun"


class DecisionAbout(StrEnum):
    """What a decision says: about the verdict (a label for the judge and routing audits), or
    about the run itself (a degraded step, a broken source), which labels nothing."""

    VERDICT = "verdict"
    PROCESS = "process"


class Review(BaseModel):
    id: str
    debate_id: str
    status: ReviewStatus = ReviewStatus.PENDING
    reason: str = ""                  # why it was routed (band, irreconcilable, consensus flag)
    spot_check: bool = False          # published, then drawn by the sampler to measure routing
    about: DecisionAbout | None = None            # decided: what the decision is about
    named_winner: PanelSide | None = None  # the side the reviewer said should win
    channel_id: str | None = None
    message_ts: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_note: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class AppliedThresholds(BaseModel):
    """Alpha cut-offs an operator applied to a preset (routing uses them over the preset's own);
    ``thresholds`` None puts the preset's own back. Every change is kept, the newest in force."""

    preset: str
    thresholds: ThresholdSpec | None
    invalid: str = ""   # why stored cut-offs were not valid (then ``thresholds`` is None)
    applied_by: str
    applied_at: datetime
    note: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)


class AuditEvent(BaseModel):
    """One link of a tamper-evident chain: a debate's, or the global one (debate_id None)."""

    seq: int
    debate_id: str | None
    kind: str
    actor: str
    data: dict[str, Any] = Field(default_factory=dict)
    at: datetime
    prev_hash: str
    hash: str
