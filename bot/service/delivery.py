"""What a finished debate owes the outside world, decided once for every door.

`obligations` is read inside the transaction that records the result (DebateService.finish), and
each obligation is written to the outbox there (storage/outbox.py), so the result and what it owes
commit together or not at all: a debate whose thread is in Slack owes that thread its result (the
streamed plan stopped with the divergence summary, or the status message brought to its end and the
summary posted; a DM's status line cleared); a debate routed to a person owes the review channel
its request; a debate whose link was unfurled as a Work Object owes the cards a refresh. The
dispatcher of each target (bot/slack/delivery.py for Slack) delivers them with retries, after
restarts and kills, from any process; lease bookkeeping of running debates never touches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from storage.records import DebateRecord, Review

if TYPE_CHECKING:   # the outbox's tables are mapped only where something is delivered: a
    # terminal run without Slack never loads them (bot/service/debates.py `finish`)
    from storage.outbox import Backlog, DeliveryKind

SLACK = "slack"
#: a delivery still pending after this is late enough to say so in /healthz
OVERDUE = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Obligation:
    kind: DeliveryKind
    ref: str
    target: str = SLACK


def owes_thread(record: DebateRecord) -> bool:
    """Whether the debate has a Slack thread of its own to be told the result in (a scheduled
    debate has only a channel: its digest or brief reports it, not a thread per debate)."""
    origin = record.origin
    return bool(origin.channel_id and origin.thread_ts)


def obligations(record: DebateRecord, review: Review | None, *, targets: frozenset[str],
                now: datetime, unfurled: bool = False) -> list[Obligation]:
    """What `record`, finishing at `now`, owes (nothing without a target to deliver to);
    `unfurled`: its link was unfurled as a card somewhere, which now shows an old status."""
    if SLACK not in targets:
        return []
    owed: list[Obligation] = []
    if owes_thread(record):
        owed.append(Obligation("thread_result", now.isoformat()))
    if review is not None:
        owed.append(Obligation("review_request", review.id))
    if unfurled:
        owed.append(Obligation("work_objects", now.isoformat()))
    return owed


def delivery_problem(backlog: Backlog, *, now: datetime) -> str | None:
    """Why deliveries are late or failing, in one sentence (None when they are not)."""
    parts = []
    if backlog.failed:
        parts.append(f"{backlog.failed} Slack deliver{'y' if backlog.failed == 1 else 'ies'} "
                     "failed after every retry")
    if backlog.oldest_pending is not None and now - backlog.oldest_pending > OVERDUE:
        minutes = int((now - backlog.oldest_pending).total_seconds() // 60)
        parts.append(f"{backlog.pending} pending, the oldest for {minutes} min")
    if not parts:
        return None
    why = f" (last error: {backlog.last_error})" if backlog.last_error else ""
    return "; ".join(parts) + why + "; see the console's Deliveries page"
