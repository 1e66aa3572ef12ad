"""Human reviews of debates the judges could not agree on.

A decision is one conditional UPDATE (`... WHERE id = :id AND status = 'pending'`): of two
reviewers clicking at once, or two replicas handling the same click, exactly one wins and the
other learns it lost (None) instead of overwriting the first decision.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast
from uuid import uuid4

from sqlalchemy import Table, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from engine.oversight.panel_records import Side as PanelSide
from engine.oversight.panel_records import side_of
from storage.db import write
from storage.errors import NotFound
from storage.models import DebateRow, ReviewRow
from storage.records import DecisionAbout, Review, ReviewStatus
from storage.tenancy import Workspace, owned_by


def to_review(row: ReviewRow) -> Review:
    return Review(
        id=row.id, debate_id=row.debate_id, status=ReviewStatus(row.status), reason=row.reason,
        channel_id=row.channel_id, message_ts=row.message_ts, decided_by=row.decided_by,
        decided_at=row.decided_at, decision_note=row.decision_note, created_at=row.created_at,
        spot_check=row.spot_check, about=DecisionAbout(row.about) if row.about else None,
        named_winner=side_of(row.named_winner),
    )


async def create(
    session: AsyncSession, *, debate_id: str, reason: str, now: datetime | None = None,
    spot_check: bool = False,
) -> Review:
    """A pending review of the debate (NotFound if there is no such debate); `spot_check`: a
    published result the sampler drew, to measure how often routing publishes wrongly."""
    if await session.get(DebateRow, debate_id) is None:  # no query when the caller holds it
        raise NotFound("debate", debate_id)
    values = {"id": uuid4().hex, "debate_id": debate_id, "status": ReviewStatus.PENDING.value,
              "reason": reason, "channel_id": None, "message_ts": None, "decided_by": None,
              "decided_at": None, "decision_note": "", "created_at": now or utcnow(),
              "spot_check": spot_check, "about": None, "named_winner": None}
    await write(session, _INSERT, values)   # Core, built once: no unit of work for one row
    return to_review(ReviewRow(**values))


_INSERT = insert(cast(Table, ReviewRow.__table__))


async def _load(session: AsyncSession, review_id: str) -> ReviewRow:
    row = await session.scalar(
        select(ReviewRow).where(ReviewRow.id == review_id)
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise NotFound("review", review_id)
    return row


async def get(session: AsyncSession, review_id: str) -> Review:
    return to_review(await _load(session, review_id))


async def get_by_debate(session: AsyncSession, debate_id: str) -> Review | None:
    """The debate's latest review, if it has one."""
    row = await session.scalar(
        select(ReviewRow).where(ReviewRow.debate_id == debate_id)
        .order_by(ReviewRow.created_at.desc(), ReviewRow.id.desc()).limit(1)
        .execution_options(populate_existing=True)
    )
    return to_review(row) if row is not None else None


async def list_pending(session: AsyncSession, *, limit: int = 100,
                       workspace: Workspace | None = None) -> list[Review]:
    """Pending reviews, oldest first; with `workspace`, of the debates it may see only."""
    stmt = select(ReviewRow).where(ReviewRow.status == ReviewStatus.PENDING.value)
    if workspace is not None:
        stmt = stmt.join(DebateRow, DebateRow.id == ReviewRow.debate_id).where(
            owned_by(workspace))
    rows = await session.scalars(stmt.order_by(ReviewRow.created_at, ReviewRow.id).limit(limit))
    return [to_review(row) for row in rows]


async def set_message(
    session: AsyncSession, review_id: str, channel_id: str, message_ts: str
) -> Review:
    """Where the review's Slack message is, so a decision can update it."""
    row = await _load(session, review_id)
    row.channel_id = channel_id
    row.message_ts = message_ts
    await session.flush()
    return to_review(row)


async def decide(
    session: AsyncSession, *, review_id: str, status: ReviewStatus, by: str, note: str = "",
    now: datetime | None = None, about: DecisionAbout = DecisionAbout.VERDICT,
    named_winner: PanelSide | None = None,
) -> Review | None:
    """Record the decision if the review is still pending; None if someone already decided.
    NotFound if there is no such review. `about` and `named_winner` make it a label (see
    storage.panels). Auditing the press is the caller's (it knows what the decision leads to)."""
    status = ReviewStatus(status)
    if status is ReviewStatus.PENDING:
        raise ValueError("a decision cannot be 'pending'")
    decided_at = now or utcnow()
    result = await session.execute(
        update(ReviewRow)
        .where(ReviewRow.id == review_id, ReviewRow.status == ReviewStatus.PENDING.value)
        .values(status=status.value, decided_by=by, decided_at=decided_at, decision_note=note,
                about=DecisionAbout(about).value, named_winner=named_winner)
        .returning(ReviewRow.debate_id).execution_options(synchronize_session=False)
    )
    decided = result.scalar_one_or_none() is not None
    row = await _load(session, review_id)  # NotFound if it never existed
    return to_review(row) if decided else None
