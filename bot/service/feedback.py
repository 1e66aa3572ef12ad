"""Readers' feedback on results (👍 / 👎 and a "Why?"), the same for every surface.

Anyone who sees a result may give it: one feedback per reader and result, a second press
replacing the first (never counted twice). Every change is audited in the debate's chain. It is
stored apart from the reviewers' decisions, with the preset, routing and rehearsal flag the reader
saw: the reports count it (engine/oversight/feedback.py), calibration never reads it. A debate
that does not exist, has no result yet, or belongs to another workspace gets nothing stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.service.debates import DebateService
from engine.characters import require_visible
from engine.errors import DialecticError, InvalidRequest
from engine.oversight.feedback import Rating
from storage import audit, debates, feedback
from storage.feedback import Feedback
from storage.records import DebateRecord
from storage.tenancy import Workspace

__all__ = ["BLANK_WHY", "MAX_REASON", "FeedbackDesk", "Given", "NoSuchResult"]

#: How long a "Why?" may be (the form says so; longer text is refused by the form itself).
MAX_REASON = 500
BLANK_WHY = "Say why: a blank reason teaches nothing."
UNKNOWN = "that result is not one I know"


class NoSuchResult(DialecticError):
    """No result a reader could have seen carries this id (unknown, unfinished, other team)."""


@dataclass(frozen=True, slots=True)
class Given:
    """The feedback now in force, and the thumb it replaced (None: the reader's first)."""

    feedback: Feedback
    previous: Rating | None


class FeedbackDesk:
    def __init__(self, service: DebateService) -> None:
        self.service = service

    async def check(self, debate_id: str, workspace: Workspace | None) -> DebateRecord:
        """The debate, if a reader of `workspace` can have seen its result; NoSuchResult if not."""
        async with self.service.db.transaction(readonly=True) as session:
            found = await debates.visible(session, debate_id, workspace,
                                           operator=workspace is None)
        if found is None or found.result is None:
            raise NoSuchResult(UNKNOWN)
        return found

    async def give(self, debate_id: str, *, user: str, workspace: Workspace | None,
                   rating: Rating | None = None, reason: str | None = None,
                   surface: str = "") -> Given:
        """Store (or replace) the reader's thumb and/or reason, audited; NoSuchResult when no
        result of this workspace has that id, InvalidRequest for a blank or long reason.
        `workspace` None: the operator's own surfaces, which may rate any result."""
        if reason is not None:
            reason = require_visible(reason, BLANK_WHY)
            if len(reason) > MAX_REASON:
                raise InvalidRequest(f"say why in {MAX_REASON} characters or fewer")
        if not user:
            raise NoSuchResult(UNKNOWN)
        async with self.service.db.transaction() as session:
            record = await debates.visible(session, debate_id, workspace,
                                           operator=workspace is None)
            result = record.result if record is not None else None
            if record is None or result is None:
                raise NoSuchResult(UNKNOWN)
            before = await feedback.get(session, debate_id, user)
            stored = await feedback.put(
                session, debate_id=debate_id, user_id=user,
                team_id=workspace.team_id if workspace is not None else None, rating=rating,
                reason=reason, preset=result.preset or record.preset, routing=result.routing,
                rehearsal=result.rehearsal, now=self.service.clock())
            await audit.append(session, debate_id=debate_id, kind="feedback_given", actor=user,
                               data={"rating": rating, "reason": reason,
                                     "replaced": before.rating if before else None,
                                     "rehearsal": result.rehearsal, "surface": surface})
        return Given(stored, before.rating if before else None)

