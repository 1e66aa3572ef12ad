"""What scheduled runs produce, as values: each signal's outcome, a digest's report, how a firing
ended, a schedule as listed, a planned brief. Surfaces render them (Slack: bot/slack/views)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bot.service.results import is_incomplete
from engine.domain import DebateResult
from engine.vocabulary import ROUTED_TO_HUMANS
from storage.records import DebateRecord, DebateStatus

UNSETTLED_STATUSES = frozenset({DebateStatus.FAILED, DebateStatus.TIMED_OUT,
                                DebateStatus.AWAITING_REVIEW, DebateStatus.ESCALATED})


class NotDebated(StrEnum):
    """Why a signal got no debate."""

    SKIPPED = "skipped"       # no budget left (or over the schedule's max_signals)
    REJECTED = "rejected"     # not a valid debate request



@dataclass(frozen=True, slots=True)
class SignalOutcome:
    """What became of one signal: its debate (when one ran) or why it was skipped."""

    title: str
    status: str = NotDebated.SKIPPED      # a debate status, or why not debated
    debate_id: str | None = None
    url: str | None = None
    result: DebateResult | None = None
    reason: str = ""                      # why skipped, rejected, failed or unfinished
    cost_usd: float = 0.0
    downgraded_from: str | None = None
    cached: bool = False

    @property
    def debated(self) -> bool:
        return self.debate_id is not None

    @property
    def focus(self) -> bool:
        """True when a person should look: routed, irreconcilable, failed, or unfinished."""
        if not self.debated:
            return False
        result = self.result
        if result is None or self.status in UNSETTLED_STATUSES:
            return True
        irreconcilable = result.consensus is not None and result.consensus.irreconcilable
        return result.routing in ROUTED_TO_HUMANS or irreconcilable or is_incomplete(result)


def outcome_for(title: str, record: DebateRecord, *, url: str, cached: bool = False,
                downgraded_from: str | None = None) -> SignalOutcome:
    """The outcome of a submitted signal from its debate record, finished or not."""
    finished = record.result is not None
    reason = record.error
    if not finished:
        reason = f"still {record.status.value} when the digest was posted"
    return SignalOutcome(
        title=title, status=record.status.value, debate_id=record.id, url=url,
        result=record.result, reason=reason, cost_usd=0.0 if cached else record.cost_usd,
        downgraded_from=downgraded_from or record.downgraded_from, cached=cached)


@dataclass(frozen=True, slots=True)
class DigestReport:
    """Everything one digest run found, submitted and learned; rendered once, stored as detail."""

    schedule_id: str
    slot: str
    when: datetime
    outcomes: tuple[SignalOutcome, ...]
    source_problems: tuple[str, ...] = ()
    earlier_problems: tuple[str, ...] = ()
    rehearsal: bool = False

    @property
    def total_cost(self) -> float:
        return sum(o.cost_usd for o in self.outcomes)

    @property
    def focus(self) -> list[SignalOutcome]:
        return [o for o in self.outcomes if o.focus]

    @property
    def settled(self) -> list[SignalOutcome]:
        return [o for o in self.outcomes if o.debated and not o.focus]

    @property
    def not_debated(self) -> list[SignalOutcome]:
        return [o for o in self.outcomes if not o.debated]


ALREADY_CLAIMED = "already_claimed"   # a RunReport status: another replica won the slot
REMOVED = "removed"                   # a RunReport status: the workspace removed the schedule


@dataclass(frozen=True, slots=True)
class RunReport:
    """How one firing ended: a RunStatus, or ALREADY_CLAIMED by another replica."""

    schedule_id: str
    slot: str
    status: str
    debate_ids: tuple[str, ...] = ()
    message_ts: str | None = None
    digest: DigestReport | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """A schedule as `/debate schedules` and `dialectic schedule list` show it."""

    id: str
    cron: str
    timezone: str
    channel: str
    preset: str
    enabled: bool
    paused: bool
    next_fire: datetime | None


@dataclass(frozen=True, slots=True)
class BriefPlan:
    """A planned brief: the debate starts at `start_at` to post before `meeting_at`."""

    id: str
    topic: str
    channel: str
    requested_by: str
    meeting_at: datetime
    start_at: datetime
    status: str
