"""The durable queue: workers claim debates with a lease and renew it while they run them.

A debate is claimable when it is queued, or when it is debating/judging and its lease has run
out (its worker died): then it is reclaimed, resumes from its checkpoints, and `attempts` counts
up. PostgreSQL picks with SELECT ... FOR UPDATE SKIP LOCKED, so concurrent workers never take
the same debate and never wait on each other; on SQLite the IMMEDIATE transaction serialises.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage import audit, debates
from storage.debates import to_record
from storage.lifecycle import CANCELLED_PREFIX
from storage.models import DebateRow
from storage.records import DebateRecord, DebateStatus

ACTIVE_STATUSES = (DebateStatus.DEBATING.value, DebateStatus.JUDGING.value)


def _claimable(now: datetime) -> ColumnElement[bool]:
    lease_over = or_(DebateRow.lease_expires_at.is_(None), DebateRow.lease_expires_at < now)
    return or_(DebateRow.status == DebateStatus.QUEUED.value,
               and_(DebateRow.status.in_(ACTIVE_STATUSES), lease_over))


async def claim(
    session: AsyncSession, *, worker_id: str, lease_seconds: float, now: datetime
) -> DebateRecord | None:
    """Take the oldest claimable debate for `worker_id`, or None when there is nothing to do."""
    taken = await claim_many(session, worker_id=worker_id, lease_seconds=lease_seconds, now=now,
                             limit=1)
    return taken[0] if taken else None


async def claim_many(
    session: AsyncSession, *, worker_id: str, lease_seconds: float, now: datetime, limit: int
) -> list[DebateRecord]:
    """Take up to `limit` of the oldest claimable debates for `worker_id`, in one transaction (a
    worker with free slots fills them at once; its debates then start together and share their
    first reads). Rows another worker has locked are skipped, not waited for."""
    if limit < 1:
        return []
    rows = list(await session.scalars(
        select(DebateRow).where(_claimable(now))
        .order_by(DebateRow.created_at, DebateRow.id).limit(limit)
        .with_for_update(skip_locked=True).execution_options(populate_existing=True)
    ))
    return [await _take(session, row, worker_id=worker_id, lease_seconds=lease_seconds, now=now)
            for row in rows]


async def claim_one(session: AsyncSession, debate_id: str, *, worker_id: str,
                    lease_seconds: float, now: datetime) -> DebateRecord | None:
    """Take one named debate if it is claimable (an evaluation runs its own debates here);
    None when it is not (another worker holds it, or it finished)."""
    row = await session.scalar(
        select(DebateRow).where(DebateRow.id == debate_id, _claimable(now))
        .with_for_update(skip_locked=True).execution_options(populate_existing=True))
    if row is None:
        return None
    return await _take(session, row, worker_id=worker_id, lease_seconds=lease_seconds, now=now)


async def _take(session: AsyncSession, row: DebateRow, *, worker_id: str, lease_seconds: float,
                now: datetime) -> DebateRecord:
    debates.hold(session, row)  # the transition below reads it no more
    lease = {"lease_owner": worker_id, "lease_expires_at": now + timedelta(seconds=lease_seconds),
             "attempts": row.attempts + 1}
    if row.status == DebateStatus.QUEUED.value:
        record = await debates.transition(
            session, row.id, DebateStatus.DEBATING, actor=worker_id, reason="claimed",
            started_at=row.started_at or now, **lease,
        )
        await audit.append(session, debate_id=row.id, kind="claimed", actor=worker_id,
                           data={"worker": worker_id, "attempt": record.attempts}, at=now)
        return record
    previous = row.lease_owner
    for name, value in lease.items():
        setattr(row, name, value)
    row.updated_at = now
    await session.flush()
    await audit.append(
        session, debate_id=row.id, kind="reclaimed", actor=worker_id,
        data={"worker": worker_id, "previous_owner": previous, "attempt": row.attempts}, at=now,
    )
    return to_record(row)


async def renew(
    session: AsyncSession, *, debate_id: str, worker_id: str, lease_seconds: float, now: datetime
) -> bool:
    """Extend the lease; False when the worker no longer holds it (it was reclaimed)."""
    result = await session.execute(
        update(DebateRow)
        .where(DebateRow.id == debate_id, DebateRow.lease_owner == worker_id,
               DebateRow.status.in_(ACTIVE_STATUSES))
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds), updated_at=now)
        .returning(DebateRow.id).execution_options(synchronize_session=False)
    )
    return result.scalar_one_or_none() is not None


async def renew_many(
    session: AsyncSession, *, debate_ids: list[str], worker_id: str, lease_seconds: float,
    now: datetime,
) -> set[str]:
    """Extend the leases of every debate `worker_id` runs, in one statement; the ids it still
    holds (a debate missing from the answer was reclaimed by another worker)."""
    if not debate_ids:
        return set()
    result = await session.execute(
        update(DebateRow)
        .where(DebateRow.id.in_(debate_ids), DebateRow.lease_owner == worker_id,
               DebateRow.status.in_(ACTIVE_STATUSES))
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds), updated_at=now)
        .returning(DebateRow.id).execution_options(synchronize_session=False)
    )
    return set(result.scalars())


async def taken_elsewhere(session: AsyncSession, *, debate_ids: list[str], worker_id: str
                          ) -> set[str]:
    """Of `debate_ids` (leases `worker_id` could not renew), those it has really lost: still to
    run (queued again, or running) under another owner or none, or cancelled (its workspace
    uninstalled the app: storage/purges.py). A debate that finished is not lost: its worker is
    only finishing up, and what it owes is in the outbox."""
    if not debate_ids:
        return set()
    elsewhere = and_(DebateRow.status.in_((DebateStatus.QUEUED.value, *ACTIVE_STATUSES)),
                     or_(DebateRow.lease_owner.is_(None), DebateRow.lease_owner != worker_id))
    cancelled = and_(DebateRow.status == DebateStatus.FAILED.value,
                     DebateRow.error.startswith(CANCELLED_PREFIX))
    rows = await session.scalars(
        select(DebateRow.id).where(DebateRow.id.in_(debate_ids), or_(elsewhere, cancelled)))
    return set(rows)


async def release(
    session: AsyncSession, *, debate_id: str, worker_id: str,
    reason: str = "worker shut down before finishing",
) -> bool:
    """Give the debate back (graceful shutdown): queued again if it was still running.
    False when `worker_id` does not hold its lease."""
    row = await session.scalar(
        select(DebateRow).where(DebateRow.id == debate_id).with_for_update()
        .execution_options(populate_existing=True)
    )
    if row is None or row.lease_owner != worker_id:
        return False
    debates.hold(session, row)
    if row.status in ACTIVE_STATUSES:
        await debates.transition(session, debate_id, DebateStatus.QUEUED, actor=worker_id,
                                 reason=reason)
    else:
        row.lease_owner = None
        row.lease_expires_at = None
        await session.flush()
    return True


async def depth(session: AsyncSession) -> dict[str, int]:
    """How many debates wait or run: {"queued": n, "debating": n, "judging": n}."""
    rows = await session.execute(
        select(DebateRow.status, func.count())
        .where(DebateRow.status.in_((DebateStatus.QUEUED.value, *ACTIVE_STATUSES)))
        .group_by(DebateRow.status)
    )
    counts = {DebateStatus.QUEUED.value: 0, **dict.fromkeys(ACTIVE_STATUSES, 0)}
    counts.update({status: int(n) for status, n in rows})
    return counts
