"""A debate's lifecycle statuses: the one word list every layer shares. Kept apart from
storage/records.py, which builds pydantic records on the engine's domain, so the command line's
grammar (`dialectic list --status`) loads no more than this.
"""

from __future__ import annotations

from enum import StrEnum

from engine.vocabulary import ResultStatus


class DebateStatus(StrEnum):
    """A debate's lifecycle. The three statuses a run ends with are the engine's ResultStatus."""

    CREATED = "created"
    QUEUED = "queued"
    DEBATING = "debating"
    JUDGING = "judging"
    COMPLETED = ResultStatus.COMPLETED.value
    FAILED = ResultStatus.FAILED.value
    TIMED_OUT = ResultStatus.TIMED_OUT.value
    AWAITING_REVIEW = "awaiting_review"
    APPROVED = "approved"
    ESCALATED = "escalated"


#: how a cancelled debate's error begins: a failed debate nobody resumes (its workspace
#: uninstalled the app, or the operator purged its data); its worker, renewing its lease, stops
#: its copy on seeing it (storage/queue.py)
CANCELLED_PREFIX = "cancelled:"
