"""A workspace's data after it uninstalled the app: its unfinished work stopped, and (when the
operator configured so, or asks) everything written for it erased.

Stopping (`cancel`, `drop_deliveries`, `drop_starts`): a queued or running debate of the
workspace fails as cancelled, its hold given back to the day; what Slack is still owed for its
debates is closed undelivered; its Slack starts not yet through are ended. Erasing (`erase_*`),
in batches, each in the caller's one transaction: a batch's debates with every row that hangs
off them (steps, reviews, panels, evidence, feedback, threads, deliveries, unfurls, the thread
messages kept for them) and their audit chains, then the workspace's own rows (settings, what
the bot learnt about it, its Slack starts). The budget ledger is not touched: a purge erases
content, not money, so each day's figures still add up to what was spent.

Repositories take `*, session` and never commit, like the rest of `storage`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import ColumnElement, Table, and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage import budget, debates, outbox
from storage.db import upserting, write
from storage.installations import BOTS
from storage.lifecycle import CANCELLED_PREFIX, DebateStatus
from storage.models import (
    Base,
    DebateRow,
    EvidenceRow,
    FeedbackRow,
    PanelRow,
    ReviewRow,
    StepRow,
)
from storage.outbox_rows import DeliveryRow, SlackStartRow, UnfurlRow
from storage.records import DebateRecord
from storage.slack_rows import SlackMessageRow, SlackThreadRow, SlackWorkspaceRow
from storage.starts import FAILED as START_FAILED
from storage.starts import PENDING as START_PENDING
from storage.workspace_rows import WorkspacePurgeRow, WorkspaceScheduleRow, WorkspaceSettingsRow

PurgeStatus = Literal["running", "done"]
RUNNING: PurgeStatus = "running"
DONE: PurgeStatus = "done"
UNFINISHED = (DebateStatus.QUEUED.value, DebateStatus.DEBATING.value,
              DebateStatus.JUDGING.value, DebateStatus.CREATED.value)
#: the tables a debate's rows hang off, erased before the debate itself
DEBATE_TABLES: tuple[type[Base], ...] = (StepRow, ReviewRow, PanelRow, EvidenceRow, FeedbackRow,
                                         DeliveryRow, UnfurlRow)


@dataclass(frozen=True, slots=True)
class Purge:
    """A purge as recorded."""

    team_id: str
    status: PurgeStatus
    reason: str
    requested_by: str
    requested_at: datetime
    counts: dict[str, int]


def _team(column: Any, team_id: str) -> ColumnElement[bool]:
    compared: ColumnElement[bool] = column["team_id"].as_string() == team_id
    return compared


def of_team(team_id: str) -> ColumnElement[bool]:
    """The debates started in workspace `team_id` (storage/tenancy.py's owner)."""
    return _team(DebateRow.origin, team_id)


# --- stopping what the workspace still had going ---

async def unfinished(session: AsyncSession, team_id: str) -> list[DebateRecord]:
    """The workspace's debates still queued or running, locked for the caller."""
    rows = await session.scalars(
        select(DebateRow).where(of_team(team_id), DebateRow.status.in_(UNFINISHED))
        .order_by(DebateRow.created_at).with_for_update()
        .execution_options(populate_existing=True))
    return [debates.to_record(row) for row in rows]


async def cancel(session: AsyncSession, record: DebateRecord, *, reason: str, actor: str
                 ) -> DebateRecord:
    """The debate fails as cancelled (`error` begins with CANCELLED_PREFIX). A running one
    keeps its lease until it runs out: its worker, renewing, learns it was cancelled and stops
    its copy (storage/queue.py), and nothing erases the debate before then."""
    running = record.status in (DebateStatus.DEBATING, DebateStatus.JUDGING)
    lease = ({"lease_owner": record.lease_owner, "lease_expires_at": record.lease_expires_at}
             if running else {})
    return await debates.transition(session, record.id, DebateStatus.FAILED, actor=actor,
                                    reason=f"{CANCELLED_PREFIX} {reason}",
                                    error=f"{CANCELLED_PREFIX} {reason}", **lease)


async def drop_deliveries(session: AsyncSession, team_id: str, *, why: str, now: datetime
                          ) -> int:
    """Close what the workspace's debates still owe Slack, undelivered (`failed`, saying why)."""
    owed = select(DebateRow.id).where(of_team(team_id)).scalar_subquery()
    result = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.debate_id.in_(owed), DeliveryRow.status == outbox.PENDING)
        .values(status=outbox.FAILED, last_error=why, claimed_by=None, claimed_until=None,
                updated_at=now)
        .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def drop_starts(session: AsyncSession, team_id: str, *, why: str, now: datetime) -> int:
    """End the workspace's Slack starts not yet through: nobody finishes them any more."""
    result = await session.execute(
        update(SlackStartRow)
        .where(_team(SlackStartRow.place, team_id), SlackStartRow.status == START_PENDING)
        .values(status=START_FAILED, last_error=why, claimed_by=None, claimed_until=None,
                updated_at=now)
        .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


@dataclass(frozen=True, slots=True)
class Stopped:
    """What stopping a workspace's work did."""

    cancelled: tuple[str, ...]
    released_usd: float
    deliveries: int
    starts: int


async def stop(session: AsyncSession, team_id: str, *, why: str, actor: str, now: datetime
               ) -> Stopped:
    """Cancel the workspace's unfinished debates (their holds released, as a refused debate's
    are), close what its debates owe Slack and end its Slack starts."""
    cancelled: list[str] = []
    released = 0.0
    for record in await unfinished(session, team_id):
        released += await budget.held(session, record.id)
        await cancel(session, record, reason=why, actor=actor)
        await budget.release(session, day=record.created_at.date(), debate_id=record.id,
                             now=now)
        cancelled.append(record.id)
    deliveries = await drop_deliveries(session, team_id, why=why, now=now)
    starts = await drop_starts(session, team_id, why=why, now=now)
    return Stopped(tuple(cancelled), round(released, 9), deliveries, starts)


# --- the purge's own record ---

async def begin(session: AsyncSession, *, team_id: str, reason: str, requested_by: str,
                now: datetime) -> None:
    """Record that the workspace's data is to be erased (again, if it was before)."""
    await write(session, upserting(
        session, WorkspacePurgeRow, conflict=("team_id",),
        update=("status", "reason", "requested_by", "requested_at", "counts", "finished_at")),
        {"team_id": team_id, "status": RUNNING, "reason": reason, "requested_by": requested_by,
         "requested_at": now, "counts": {}, "finished_at": None})


async def running(session: AsyncSession) -> list[Purge]:
    """The purges not finished (a crash, or debates whose leases had not run out yet)."""
    rows = await session.scalars(select(WorkspacePurgeRow)
                                 .where(WorkspacePurgeRow.status == RUNNING)
                                 .order_by(WorkspacePurgeRow.requested_at))
    return [_purge(row) for row in rows]


async def get(session: AsyncSession, team_id: str) -> Purge | None:
    row = await session.get(WorkspacePurgeRow, team_id, populate_existing=True)
    return None if row is None else _purge(row)


def _purge(row: WorkspacePurgeRow) -> Purge:
    return Purge(row.team_id, RUNNING if row.status == RUNNING else DONE, row.reason,
                 row.requested_by, row.requested_at, {k: int(v) for k, v in row.counts.items()})


async def add_counts(session: AsyncSession, team_id: str, counts: dict[str, int]) -> None:
    row = await session.get(WorkspacePurgeRow, team_id, with_for_update=True,
                            populate_existing=True)
    if row is not None:
        row.counts = dict(Counter(row.counts) + Counter(counts))


async def finish(session: AsyncSession, team_id: str, *, now: datetime) -> None:
    await session.execute(update(WorkspacePurgeRow).where(WorkspacePurgeRow.team_id == team_id)
                          .values(status=DONE, finished_at=now)
                          .execution_options(synchronize_session=False))


# --- erasing ---

def _erasable(team_id: str, now: datetime) -> ColumnElement[bool]:
    """The workspace's debates that nothing runs any more (a cancelled one once its lease ran
    out: its worker has stopped)."""
    return and_(of_team(team_id), DebateRow.status.not_in(UNFINISHED),
                or_(DebateRow.lease_expires_at.is_(None), DebateRow.lease_expires_at < now))


async def erasable(session: AsyncSession, team_id: str, *, now: datetime, limit: int
                   ) -> list[str]:
    """The next batch of the workspace's debates to erase, oldest first."""
    return list(await session.scalars(
        select(DebateRow.id).where(_erasable(team_id, now))
        .order_by(DebateRow.created_at, DebateRow.id).limit(limit)))


async def remaining(session: AsyncSession, team_id: str) -> int:
    """How many of the workspace's debates are still stored."""
    return int(await session.scalar(select(func.count()).select_from(DebateRow)
                                    .where(of_team(team_id))) or 0)


async def census(session: AsyncSession, team_id: str, *, now: datetime) -> dict[str, int]:
    """How many debates the workspace has: all, erasable now, still running (a dry run)."""
    total = await session.scalar(select(func.count()).select_from(DebateRow)
                                 .where(of_team(team_id)))
    ready = await session.scalar(select(func.count()).select_from(DebateRow)
                                 .where(_erasable(team_id, now)))
    counts = {"debates": int(total or 0), "erasable now": int(ready or 0)}
    for model in DEBATE_TABLES:
        table = _table(model)
        owned = select(DebateRow.id).where(of_team(team_id)).scalar_subquery()
        n = await session.scalar(select(func.count()).select_from(table)
                                 .where(table.c.debate_id.in_(owned)))
        counts[table.name] = int(n or 0)
    return counts


def _table(model: type[Base]) -> Table:
    return cast(Table, model.__table__)


async def erase_debates(session: AsyncSession, debate_ids: list[str]) -> dict[str, int]:
    """Delete the debates and every row that hangs off them; rows deleted, by table. Their
    audit chains are the caller's (storage/audit.py `erase_chains`), in the same transaction."""
    if not debate_ids:
        return {}
    counts: dict[str, int] = {"slack_messages": await _erase_thread_messages(session, debate_ids)}
    models: tuple[type[Base], ...] = (*DEBATE_TABLES, SlackThreadRow, DebateRow)
    for model in models:
        table = _table(model)
        column = table.c.id if model is DebateRow else table.c.debate_id
        result = await session.execute(delete(table).where(column.in_(debate_ids))
                                       .execution_options(synchronize_session=False))
        counts[table.name] = int(getattr(result, "rowcount", 0) or 0)
    return counts


async def _erase_thread_messages(session: AsyncSession, debate_ids: list[str]) -> int:
    """The messages kept from the debates' Slack threads (their root included), unless another
    debate still lives in the same thread."""
    threads = {(c, t) for c, t in await session.execute(
        select(SlackThreadRow.channel_id, SlackThreadRow.thread_ts)
        .where(SlackThreadRow.debate_id.in_(debate_ids)))}
    shared = {(c, t) for c, t in await session.execute(
        select(SlackThreadRow.channel_id, SlackThreadRow.thread_ts)
        .where(SlackThreadRow.debate_id.not_in(debate_ids),
               SlackThreadRow.channel_id.in_({c for c, _ in threads})))
    } if threads else set()
    erased = 0
    for channel_id, thread_ts in sorted(threads - shared):
        result = await session.execute(
            delete(SlackMessageRow)
            .where(SlackMessageRow.channel_id == channel_id,
                   or_(SlackMessageRow.thread_ts == thread_ts, SlackMessageRow.ts == thread_ts))
            .execution_options(synchronize_session=False))
        erased += int(getattr(result, "rowcount", 0) or 0)
    return erased


async def erase_workspace_rows(session: AsyncSession, team_id: str) -> dict[str, int]:
    """The workspace's own rows: its settings and schedules, what the bot learnt about it, its
    Slack starts."""
    counts: dict[str, int] = {}
    for model, where in ((WorkspaceSettingsRow, WorkspaceSettingsRow.team_id == team_id),
                         (WorkspaceScheduleRow, WorkspaceScheduleRow.team_id == team_id),
                         (SlackWorkspaceRow, SlackWorkspaceRow.team_id == team_id),
                         (SlackStartRow, _team(SlackStartRow.place, team_id))):
        result = await session.execute(delete(model).where(where)
                                       .execution_options(synchronize_session=False))
        counts[model.__tablename__] = int(getattr(result, "rowcount", 0) or 0)
    return counts


async def installed(session: AsyncSession, team_id: str) -> bool:
    """Whether a bot token is stored for the workspace (multi-workspace mode's installs)."""
    found = await session.scalar(select(func.count()).select_from(BOTS)
                                 .where(BOTS.c.team_id == team_id))
    return bool(found)
