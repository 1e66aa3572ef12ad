"""The outbox: what a finished debate owes the outside world, written in the transaction that
records its result, and delivered afterwards by a dispatcher that retries (the transactional
outbox pattern).

One row per obligation (`kind`: the thread's result, a review request), unique per debate, kind
and `ref` (the review's id; the finish's time for a result), so a second finish owes anew and a
redelivered write owes nothing twice. A dispatcher claims due rows with a lease (SKIP LOCKED on
PostgreSQL; SQLite's IMMEDIATE transaction serialises), so two processes never deliver the same
row at once and a dispatcher that dies gives its rows back when the lease runs out. While it
delivers, each answer the outside world gave (a message's ts) is written to `state` at once, and
a step about to be sent is marked first: a retry skips what is done and can look for what was
sent but never recorded, so nothing is posted twice.

Repositories take `*, session` and never commit, like the rest of `storage`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import ignoring_insert, write
from storage.outbox_rows import DeliveryRow, UnfurlRow

DeliveryKind = Literal["thread_result", "review_request", "work_objects"]
DeliveryStatus = Literal["pending", "delivered", "failed"]
PENDING: DeliveryStatus = "pending"
DELIVERED: DeliveryStatus = "delivered"
FAILED: DeliveryStatus = "failed"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One obligation as the dispatcher and the console read it."""

    id: int
    debate_id: str
    kind: str
    ref: str
    target: str
    status: str
    attempts: int
    due_at: datetime
    last_error: str
    created_at: datetime
    delivered_at: datetime | None = None
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Backlog:
    """What is owed and not delivered: pending (and how old the oldest is), given up."""

    pending: int = 0
    failed: int = 0
    oldest_pending: datetime | None = None
    last_error: str = ""


def _to_delivery(row: DeliveryRow) -> Delivery:
    return Delivery(id=row.id, debate_id=row.debate_id, kind=row.kind, ref=row.ref,
                    target=row.target, status=row.status, attempts=row.attempts,
                    due_at=row.due_at, last_error=row.last_error, created_at=row.created_at,
                    delivered_at=row.delivered_at, state=dict(row.state or {}))


async def owe(session: AsyncSession, *, debate_id: str, kind: DeliveryKind, ref: str,
              now: datetime, target: str = "slack") -> None:
    """Record an obligation, due now (nothing when the same one is already owed)."""
    values = {"debate_id": debate_id, "kind": kind, "ref": ref[:64], "target": target,
              "status": PENDING, "attempts": 0, "due_at": now, "claimed_by": None,
              "claimed_until": None, "last_error": "", "state": None, "created_at": now,
              "updated_at": now, "delivered_at": None}
    await write(session, ignoring_insert(session, DeliveryRow,
                                         conflict=("debate_id", "kind", "ref")), values)


async def claim_due(session: AsyncSession, *, owner: str, now: datetime, lease_seconds: float,
                    limit: int, target: str = "slack", exclude: Sequence[int] = ()
                    ) -> list[Delivery]:
    """Take up to `limit` due obligations for `owner` (oldest first) with a lease; rows another
    dispatcher holds are skipped, not waited for, and so are `exclude` (the owner's own, still
    being delivered)."""
    rows = list(await session.scalars(
        select(DeliveryRow)
        .where(DeliveryRow.status == PENDING, DeliveryRow.target == target,
               DeliveryRow.due_at <= now, DeliveryRow.id.not_in(exclude),
               or_(DeliveryRow.claimed_until.is_(None), DeliveryRow.claimed_until < now))
        .order_by(DeliveryRow.due_at, DeliveryRow.id).limit(limit)
        .with_for_update(skip_locked=True).execution_options(populate_existing=True)))
    for row in rows:
        row.claimed_by = owner
        row.claimed_until = now + timedelta(seconds=lease_seconds)
        row.updated_at = now
    await session.flush()
    return [_to_delivery(row) for row in rows]


async def any_due(session: AsyncSession, *, now: datetime, target: str = "slack") -> bool:
    """Whether anything is due (a read: an idle dispatcher takes no write lock to learn it)."""
    found = await session.scalar(
        select(DeliveryRow.id)
        .where(DeliveryRow.status == PENDING, DeliveryRow.target == target,
               DeliveryRow.due_at <= now,
               or_(DeliveryRow.claimed_until.is_(None), DeliveryRow.claimed_until < now))
        .limit(1))
    return found is not None


async def save_state(session: AsyncSession, delivery_id: int, *, owner: str,
                     state: dict[str, Any], now: datetime, lease_seconds: float) -> bool:
    """Write what has been sent so far (and extend the lease); False when `owner` no longer
    holds the row (its lease ran out and another dispatcher took it)."""
    result = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id, DeliveryRow.claimed_by == owner,
               DeliveryRow.status == PENDING)
        .values(state=state, updated_at=now,
                claimed_until=now + timedelta(seconds=lease_seconds))
        .returning(DeliveryRow.id).execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def delivered(session: AsyncSession, delivery_id: int, *, owner: str,
                    state: dict[str, Any], now: datetime) -> bool:
    """Done: what was sent stays in `state`."""
    result = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id, DeliveryRow.claimed_by == owner,
               DeliveryRow.status == PENDING)
        .values(status=DELIVERED, state=state, delivered_at=now, updated_at=now,
                claimed_by=None, claimed_until=None, last_error="")
        .returning(DeliveryRow.id).execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def failed_attempt(session: AsyncSession, delivery_id: int, *, owner: str, error: str,
                         state: dict[str, Any], now: datetime, retry_at: datetime | None
                         ) -> bool:
    """An attempt failed: try again at `retry_at`, or give up (None): then it stays listed as
    failed, with why, until someone retries it."""
    values: dict[str, Any] = {"attempts": DeliveryRow.attempts + 1, "last_error": error[:2000],
                              "state": state, "updated_at": now, "claimed_by": None,
                              "claimed_until": None}
    if retry_at is None:
        values["status"] = FAILED
    else:
        values["due_at"] = retry_at
    result = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id, DeliveryRow.claimed_by == owner,
               DeliveryRow.status == PENDING)
        .values(**values).returning(DeliveryRow.id)
        .execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def retry_now(session: AsyncSession, delivery_id: int, *, now: datetime) -> bool:
    """Make an obligation due now: one given up is tried again from its first attempt, one
    waiting out its backoff is tried at once (from the console); False when neither."""
    failed = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id, DeliveryRow.status == FAILED)
        .values(status=PENDING, due_at=now, updated_at=now, attempts=0)
        .returning(DeliveryRow.id).execution_options(synchronize_session=False))
    if failed.scalar_one_or_none() is not None:
        return True
    waiting = await session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id, DeliveryRow.status == PENDING,
               or_(DeliveryRow.claimed_until.is_(None), DeliveryRow.claimed_until < now))
        .values(due_at=now, updated_at=now)
        .returning(DeliveryRow.id).execution_options(synchronize_session=False))
    return waiting.scalar_one_or_none() is not None


async def for_debate(session: AsyncSession, debate_id: str) -> list[Delivery]:
    rows = await session.scalars(select(DeliveryRow).where(DeliveryRow.debate_id == debate_id)
                                 .order_by(DeliveryRow.id))
    return [_to_delivery(row) for row in rows]


async def undelivered(session: AsyncSession, *, limit: int = 100) -> list[Delivery]:
    """Pending and given-up obligations, oldest first (what the console lists)."""
    rows = await session.scalars(
        select(DeliveryRow).where(DeliveryRow.status.in_((PENDING, FAILED)))
        .order_by(DeliveryRow.created_at, DeliveryRow.id).limit(limit))
    return [_to_delivery(row) for row in rows]


async def backlog(session: AsyncSession) -> Backlog:
    """Counts for /healthz and the console: pending (with the oldest), failed."""
    rows = (await session.execute(
        select(DeliveryRow.status, func.count(), func.min(DeliveryRow.created_at))
        .where(DeliveryRow.status.in_((PENDING, FAILED))).group_by(DeliveryRow.status))).all()
    counts = {status: (int(n), oldest) for status, n, oldest in rows}
    error = await session.scalar(
        select(DeliveryRow.last_error)
        .where(DeliveryRow.status.in_((PENDING, FAILED)), DeliveryRow.last_error != "")
        .order_by(DeliveryRow.updated_at.desc()).limit(1))
    pending, oldest = counts.get(PENDING, (0, None))
    return Backlog(pending=pending, failed=counts.get(FAILED, (0, None))[0],
                   oldest_pending=oldest, last_error=error or "")


@dataclass(frozen=True, slots=True)
class Unfurl:
    channel_id: str
    message_ts: str
    url: str


async def remember_unfurl(session: AsyncSession, *, debate_id: str, channel_id: str,
                          message_ts: str, url: str, now: datetime) -> None:
    """A debate's link was unfurled in a posted message (idempotent)."""
    values = {"debate_id": debate_id, "channel_id": channel_id, "message_ts": message_ts,
              "url": url, "created_at": now}
    await write(session, ignoring_insert(session, UnfurlRow,
                                         conflict=("debate_id", "channel_id", "message_ts")),
                values)


async def unfurls_of(session: AsyncSession, debate_id: str, *, limit: int = 50) -> list[Unfurl]:
    """Where the debate's link was unfurled, newest first (the cards a finish refreshes)."""
    rows = await session.scalars(select(UnfurlRow).where(UnfurlRow.debate_id == debate_id)
                                 .order_by(UnfurlRow.created_at.desc()).limit(limit))
    return [Unfurl(r.channel_id, r.message_ts, r.url) for r in rows]
