"""One-off pre-meeting briefs: planned, then run once and posted before the meeting.

A brief is stored when it is asked for, so a restart does not lose it; the scheduler loads the
pending ones on start. Running one is claimed through `schedules.claim_slot` ("brief:<id>"), then
`start` moves it out of `pending` atomically, so a second replica never runs it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from storage.errors import NotFound
from storage.models import jsonable
from storage.records import BriefStatus
from storage.schedule_rows import BriefRow


@dataclass(frozen=True, slots=True)
class Brief:
    id: str
    topic: str
    channel: str
    requested_by: str
    meeting_at: datetime
    start_at: datetime
    status: BriefStatus = BriefStatus.PENDING
    debate_id: str | None = None
    message_ts: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


def _to_brief(row: BriefRow) -> Brief:
    return Brief(id=row.id, topic=row.topic, channel=row.channel, requested_by=row.requested_by,
                 meeting_at=row.meeting_at, start_at=row.start_at, status=BriefStatus(row.status),
                 debate_id=row.debate_id, message_ts=row.message_ts,
                 detail=dict(row.detail or {}), created_at=row.created_at)


async def create(session: AsyncSession, *, brief: Brief, now: datetime | None = None) -> Brief:
    """Store a planned brief (status pending)."""
    stamp = now or utcnow()
    row = BriefRow(id=brief.id, topic=brief.topic, channel=brief.channel,
                   requested_by=brief.requested_by, meeting_at=brief.meeting_at,
                   start_at=brief.start_at, status=BriefStatus.PENDING, debate_id=None,
                   message_ts=None,
                   detail=jsonable(brief.detail) if brief.detail else None,
                   created_at=stamp, updated_at=stamp)
    session.add(row)
    await session.flush()
    return _to_brief(row)


async def get(session: AsyncSession, brief_id: str) -> Brief:
    row = await session.get(BriefRow, brief_id)
    if row is None:
        raise NotFound("brief", brief_id)
    return _to_brief(row)


async def list_pending(session: AsyncSession, *, due_by: datetime | None = None,
                       limit: int = 200) -> list[Brief]:
    """Pending briefs, soonest start first; only those starting by `due_by` when given."""
    stmt = select(BriefRow).where(BriefRow.status == BriefStatus.PENDING)
    if due_by is not None:
        stmt = stmt.where(BriefRow.start_at <= due_by)
    rows = await session.scalars(stmt.order_by(BriefRow.start_at, BriefRow.id).limit(limit))
    return [_to_brief(row) for row in rows]


async def start(session: AsyncSession, brief_id: str, *, now: datetime | None = None) -> bool:
    """pending -> running; False when someone else already moved it."""
    result = await session.execute(
        update(BriefRow).where(BriefRow.id == brief_id, BriefRow.status == BriefStatus.PENDING)
        .values(status=BriefStatus.RUNNING, updated_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]  # Result of an UPDATE has it


async def finish(session: AsyncSession, brief_id: str, *, status: BriefStatus,
                 debate_id: str | None = None, message_ts: str | None = None,
                 detail: dict[str, Any] | None = None, now: datetime | None = None) -> Brief:
    """Record how a brief ended (posted, failed or missed)."""
    result = await session.execute(
        update(BriefRow).where(BriefRow.id == brief_id)
        .values(status=status, debate_id=debate_id, message_ts=message_ts,
                detail=jsonable(detail) if detail is not None else None,
                updated_at=now or utcnow())
        .returning(BriefRow).execution_options(synchronize_session=False)
    )
    row = result.scalar_one_or_none()
    if row is None:
        raise NotFound("brief", brief_id)
    return _to_brief(row)
