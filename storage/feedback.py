"""Readers' feedback on results: one row per reader and debate, kept apart from the reviews.

A press is one upsert on (debate, reader): a second press replaces the first, and two replicas
handling the same press write the same row. Nothing here reads or writes `reviews`: a reader's
thumb is not a reviewer's label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.oversight.feedback import RATINGS, FeedbackLabel, Rating
from engine.vocabulary import Routing
from storage.db import upserting, write
from storage.debates import in_oversight
from storage.models import DebateRow, FeedbackRow

__all__ = ["Feedback", "get", "labels", "put"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Feedback:
    """A reader's feedback in force on one debate's result."""

    debate_id: str
    user_id: str
    team_id: str | None
    rating: Rating | None
    reason: str
    preset: str
    routing: Routing
    rehearsal: bool
    created_at: datetime
    updated_at: datetime


def _rating(value: str | None) -> Rating | None:
    return next((r for r in RATINGS if r == value), None)


def to_feedback(row: FeedbackRow) -> Feedback:
    return Feedback(debate_id=row.debate_id, user_id=row.user_id, team_id=row.team_id,
                    rating=_rating(row.rating), reason=row.reason, preset=row.preset,
                    routing=Routing(row.routing), rehearsal=row.rehearsal,
                    created_at=row.created_at, updated_at=row.updated_at)


async def get(session: AsyncSession, debate_id: str, user_id: str) -> Feedback | None:
    row = await session.scalar(
        select(FeedbackRow).where(FeedbackRow.debate_id == debate_id,
                                  FeedbackRow.user_id == user_id)
        .execution_options(populate_existing=True))
    return to_feedback(row) if row is not None else None


async def put(session: AsyncSession, *, debate_id: str, user_id: str, team_id: str | None,
              preset: str, routing: Routing, rehearsal: bool, now: datetime,
              rating: Rating | None = None, reason: str | None = None) -> Feedback:
    """Store the reader's thumb and/or reason, replacing what they gave before (a part not
    given is kept). The debate must exist (the caller checked it)."""
    values: dict[str, Any] = {
        "debate_id": debate_id, "user_id": user_id, "team_id": team_id, "rating": rating,
        "reason": reason or "", "preset": preset, "routing": Routing(routing).value,
        "rehearsal": rehearsal, "created_at": now, "updated_at": now}
    update = ["updated_at", "team_id"]
    update += ["rating"] if rating is not None else []
    update += ["reason"] if reason is not None else []
    await write(session, upserting(session, FeedbackRow, conflict=("debate_id", "user_id"),
                                   update=tuple(update)), values)
    stored = await get(session, debate_id, user_id)
    assert stored is not None  # written just above, in this transaction
    return stored


async def labels(session: AsyncSession, *, since: datetime,
                 presets: Sequence[str] = ()) -> list[FeedbackLabel]:
    """The feedback in force that was given (or last changed) since `since`, on debates that
    count in oversight (not an evaluation's, unless its run asked: `Origin.in_oversight`)."""
    query = (select(FeedbackRow).join(DebateRow, DebateRow.id == FeedbackRow.debate_id)
             .where(FeedbackRow.updated_at >= since, in_oversight()))
    if presets:
        query = query.where(FeedbackRow.preset.in_(list(presets)))
    rows = await session.scalars(query.order_by(FeedbackRow.debate_id, FeedbackRow.user_id))
    return [FeedbackLabel(debate_id=r.debate_id, preset=r.preset, routing=Routing(r.routing),
                          rating=_rating(r.rating), rehearsal=r.rehearsal) for r in rows]

