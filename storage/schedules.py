"""Scheduled batches: each (schedule, slot) runs once across every replica, and can be paused.

`claim_slot` is an insert guarded by UNIQUE(schedule_id, slot): whichever scheduler inserts the
slot first runs it; the others see False and skip it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from storage.db import ignoring_insert, upserting, write
from storage.errors import NotFound
from storage.models import jsonable
from storage.records import RunStatus
from storage.schedule_rows import ScheduledRunRow, ScheduleStateRow


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    schedule_id: str
    slot: str
    status: RunStatus
    debate_ids: tuple[str, ...]
    created_at: datetime
    finished_at: datetime | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def _to_run(row: ScheduledRunRow) -> ScheduledRun:
    return ScheduledRun(
        schedule_id=row.schedule_id, slot=row.slot, status=RunStatus(row.status),
        debate_ids=tuple(row.debate_ids or ()), created_at=row.created_at,
        finished_at=row.finished_at, detail=dict(row.detail or {}),
    )


async def claim_slot(
    session: AsyncSession, *, schedule_id: str, slot: str, now: datetime | None = None
) -> bool:
    """True for the one caller that gets to run this slot; False for everyone after it."""
    values = {"schedule_id": schedule_id, "slot": slot, "status": RunStatus.RUNNING,
              "debate_ids": [], "created_at": now or utcnow(), "finished_at": None, "detail": None}
    result = await write(session, ignoring_insert(session, ScheduledRunRow,
                                                  conflict=("schedule_id", "slot"),
                                                  returning=("id",)), values)
    return result.scalar_one_or_none() is not None


async def finish_slot(
    session: AsyncSession, *, schedule_id: str, slot: str, status: RunStatus = RunStatus.DONE,
    debate_ids: Iterable[str] = (), detail: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> ScheduledRun:
    """Record how a claimed slot ended (NotFound if it was never claimed)."""
    result = await session.execute(
        update(ScheduledRunRow)
        .where(ScheduledRunRow.schedule_id == schedule_id, ScheduledRunRow.slot == slot)
        .values(status=status, debate_ids=list(debate_ids), finished_at=now or utcnow(),
                detail=jsonable(dict(detail)) if detail is not None else None)
        .returning(ScheduledRunRow).execution_options(synchronize_session=False)
    )
    row = result.scalar_one_or_none()
    if row is None:
        raise NotFound("scheduled run", f"{schedule_id}@{slot}")
    return _to_run(row)


async def list_runs(
    session: AsyncSession, *, schedule_id: str | None = None, limit: int = 50
) -> list[ScheduledRun]:
    """Runs, newest slot first."""
    stmt = select(ScheduledRunRow).order_by(ScheduledRunRow.slot.desc(), ScheduledRunRow.id.desc())
    if schedule_id is not None:
        stmt = stmt.where(ScheduledRunRow.schedule_id == schedule_id)
    rows = await session.scalars(stmt.limit(limit))
    return [_to_run(row) for row in rows]


async def set_paused(
    session: AsyncSession, schedule_id: str, paused: bool, by: str, now: datetime | None = None
) -> None:
    await write(session, upserting(session, ScheduleStateRow, conflict=("schedule_id",),
                                   update=("paused", "updated_by", "updated_at")),
                {"schedule_id": schedule_id, "paused": paused, "updated_by": by,
                 "updated_at": now or utcnow()})


async def is_paused(session: AsyncSession, schedule_id: str) -> bool:
    paused = await session.scalar(
        select(ScheduleStateRow.paused).where(ScheduleStateRow.schedule_id == schedule_id)
    )
    return bool(paused)
