"""A workspace's own schedules (digests its admins define), beside the operator's `[[schedules]]`
of dialectic.toml. Every change (added, changed, paused, resumed, removed) is a link in the audit
chain with the schedule before and after, in the same transaction as the change. Names are unique
per workspace (UNIQUE(team_id, name): a concurrent second add is AlreadyExists)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage import audit
from storage.errors import NotFound
from storage.workspace_rows import WorkspaceScheduleRow

__all__ = ["ADDED", "CHANGED", "EDITABLE", "REMOVED", "WorkspaceSchedule", "add", "count",
           "get", "list_all", "list_for", "remove", "update"]

ADDED, CHANGED, REMOVED = ("workspace_schedule_added", "workspace_schedule_changed",
                           "workspace_schedule_removed")
EDITABLE = ("name", "preset", "topics", "cron", "timezone", "channel", "enabled")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceSchedule:
    """One schedule of a workspace: its topics debated on `cron` (in `timezone`) with `preset`,
    the digest posted in `channel`; `enabled` False is paused."""

    id: str
    team_id: str
    name: str
    preset: str
    topics: tuple[str, ...]
    cron: str
    timezone: str
    channel: str
    enabled: bool = True
    created_by: str = ""
    created_at: datetime | None = None
    updated_by: str = ""
    updated_at: datetime | None = None

    def values(self) -> dict[str, Any]:
        """What the audit records of it (JSON data)."""
        found = asdict(self)
        return {"id": self.id, "team_id": self.team_id,
                **{k: list(v) if isinstance(v, tuple) else v for k, v in found.items()
                   if k in EDITABLE}}


def _of(row: WorkspaceScheduleRow) -> WorkspaceSchedule:
    return WorkspaceSchedule(
        id=row.id, team_id=row.team_id, name=row.name, preset=row.preset,
        topics=tuple(row.topics or ()), cron=row.cron, timezone=row.timezone,
        channel=row.channel, enabled=row.enabled, created_by=row.created_by,
        created_at=row.created_at, updated_by=row.updated_by, updated_at=row.updated_at)


async def list_for(session: AsyncSession, team_id: str) -> list[WorkspaceSchedule]:
    """The workspace's schedules, by name."""
    rows = await session.scalars(select(WorkspaceScheduleRow)
                                 .where(WorkspaceScheduleRow.team_id == team_id)
                                 .order_by(WorkspaceScheduleRow.name))
    return [_of(row) for row in rows]


async def list_all(session: AsyncSession) -> list[WorkspaceSchedule]:
    """Every workspace's schedules (what the scheduler fires)."""
    rows = await session.scalars(select(WorkspaceScheduleRow)
                                 .order_by(WorkspaceScheduleRow.team_id, WorkspaceScheduleRow.name))
    return [_of(row) for row in rows]


async def count(session: AsyncSession, team_id: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(WorkspaceScheduleRow)
                                    .where(WorkspaceScheduleRow.team_id == team_id)) or 0)


async def get(session: AsyncSession, schedule_id: str, *, lock: bool = False
              ) -> WorkspaceSchedule | None:
    row = await session.get(WorkspaceScheduleRow, schedule_id, populate_existing=True,
                            with_for_update=lock)
    return None if row is None else _of(row)


async def add(session: AsyncSession, schedule: WorkspaceSchedule, *, by: str,
              now: datetime) -> WorkspaceSchedule:
    """Insert it under a new id, audited (AlreadyExists for a name the workspace has)."""
    added = replace(schedule, id=uuid4().hex, created_by=by, created_at=now, updated_by=by,
                    updated_at=now)
    values = asdict(added)
    values["topics"] = list(added.topics)
    session.add(WorkspaceScheduleRow(**values))
    await session.flush()
    await audit.append(session, debate_id=None, kind=ADDED, actor=by, at=now,
                       data={"team_id": added.team_id, "before": None, "after": added.values()})
    return added


async def update(session: AsyncSession, schedule_id: str, changes: dict[str, Any], *, by: str,
                 now: datetime, kind: str = CHANGED
                 ) -> tuple[WorkspaceSchedule, WorkspaceSchedule]:
    """Change the named fields (NotFound if it is gone); audited when anything changed.
    Returns (before, after)."""
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValueError(f"not a schedule field: {', '.join(sorted(unknown))}")
    row = await session.get(WorkspaceScheduleRow, schedule_id, with_for_update=True,
                            populate_existing=True)
    if row is None:
        raise NotFound("workspace schedule", schedule_id)
    before = _of(row)
    stored: dict[str, Any] = {k: tuple(v) if k == "topics" else v for k, v in changes.items()}
    after = replace(before, **stored)
    if after == before:
        return before, before
    for name in EDITABLE:
        value = getattr(after, name)
        setattr(row, name, list(value) if name == "topics" else value)
    row.updated_by, row.updated_at = by, now
    await session.flush()
    await audit.append(session, debate_id=None, kind=kind, actor=by, at=now,
                       data={"team_id": before.team_id, "before": before.values(),
                             "after": after.values()})
    return before, replace(after, updated_by=by, updated_at=now)


async def remove(session: AsyncSession, schedule_id: str, *, by: str,
                 now: datetime) -> WorkspaceSchedule:
    """Delete it (NotFound if it is gone already), audited with what it was."""
    row = await session.get(WorkspaceScheduleRow, schedule_id, with_for_update=True,
                            populate_existing=True)
    if row is None:
        raise NotFound("workspace schedule", schedule_id)
    before = _of(row)
    await session.delete(row)
    await session.flush()
    await audit.append(session, debate_id=None, kind=REMOVED, actor=by, at=now,
                       data={"team_id": before.team_id, "before": before.values(),
                             "after": None})
    return before
