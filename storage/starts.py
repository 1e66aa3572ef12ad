"""Slack starts not yet through: the intent to start a debate, written before `/debate`'s ack
(and as soon as a mention, DM or shortcut's listener runs: Bolt acknowledges events first).

Slack does not send an acknowledged slash command again; a process that dies between the ack
and the submission would lose the debate while the person reads "starting…". So the listener
writes the start down first (`intend_many`: the starts of a burst share one INSERT; the request and
where it is shown, claimed by its process for a lease), records the "starting" message's ts once
it is posted, and marks the start through once the debate is submitted or refused. A start whose
lease ran out unfinished is claimed by another process (or the same one restarted) and finished:
its message is reused when its ts was recorded, and the submission carries the same idempotency
key, so a debate submitted just before a crash is not submitted twice.

Repositories take `*, session` and never commit, like the rest of `storage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import ignoring_insert, write
from storage.outbox_rows import SlackStartRow

StartStatus = Literal["pending", "done", "failed"]
PENDING: StartStatus = "pending"
DONE: StartStatus = "done"
FAILED: StartStatus = "failed"


@dataclass(frozen=True, slots=True)
class Start:
    """A start as a process finishing it reads it."""

    key: str
    place: dict[str, Any]
    request: dict[str, Any]
    message_ts: str | None
    attempts: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Intent:
    """A start to write down, held by `owner` for `lease_seconds` from `now`."""

    key: str
    place: dict[str, Any]
    request: dict[str, Any]
    owner: str
    now: datetime
    lease_seconds: float

    def row(self) -> dict[str, Any]:
        return {"key": self.key, "place": self.place, "request": self.request,
                "status": PENDING, "message_ts": None, "debate_id": None, "attempts": 0,
                "claimed_by": self.owner,
                "claimed_until": self.now + timedelta(seconds=self.lease_seconds),
                "last_error": "", "created_at": self.now, "updated_at": self.now}


async def intend(session: AsyncSession, *, key: str, place: dict[str, Any],
                 request: dict[str, Any], owner: str, now: datetime, lease_seconds: float
                 ) -> bool:
    """Write a start down, held by `owner`; False when it was already (a repeated delivery)."""
    intent = Intent(key, place, request, owner, now, lease_seconds)
    [kept], _ = await intend_many(session, [intent], False)
    return kept


async def intend_many(session: AsyncSession, intents: list[Intent], fresh: bool = False
                      ) -> tuple[list[bool], None]:
    """Write starts down in one INSERT (storage/journal.py's batch-writer shape: the starts of
    every command acknowledged at the same moment share one transaction); for each, False when
    it was already written (a key twice in the batch: the first is written)."""
    first: dict[str, Intent] = {}
    for intent in intents:
        first.setdefault(intent.key, intent)
    # the statement built once, the rows its parameters: a burst's multi-row INSERT compiled
    # afresh cost ~0.2 ms a row on the event loop, in front of every ack waiting for it; on
    # PostgreSQL the rows go as column arrays, one statement for every batch size (`write`)
    result = await write(session, ignoring_insert(
        session, SlackStartRow, conflict=("key",), returning=("key",)),
        [i.row() for i in first.values()])
    went = set(result.scalars())
    return [intent.key in went and first[intent.key] is intent for intent in intents], None


async def renew(session: AsyncSession, key: str, *, owner: str, now: datetime,
                lease_seconds: float) -> bool:
    """Extend `owner`'s hold on a pending start; False when it no longer holds it (its lease ran
    out while it waited, and another process took it)."""
    result = await session.execute(
        update(SlackStartRow)
        .where(SlackStartRow.key == key, SlackStartRow.claimed_by == owner,
               SlackStartRow.status == PENDING)
        .values(updated_at=now, claimed_until=now + timedelta(seconds=lease_seconds))
        .returning(SlackStartRow.key).execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def opened(session: AsyncSession, key: str, *, owner: str, message_ts: str,
                 now: datetime, lease_seconds: float) -> bool:
    """The "starting" message is up (its ts kept, the lease extended); False when `owner` no
    longer holds the start."""
    result = await session.execute(
        update(SlackStartRow)
        .where(SlackStartRow.key == key, SlackStartRow.claimed_by == owner,
               SlackStartRow.status == PENDING)
        .values(message_ts=message_ts, updated_at=now,
                claimed_until=now + timedelta(seconds=lease_seconds))
        .returning(SlackStartRow.key).execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def ended(session: AsyncSession, key: str, *, status: StartStatus, now: datetime,
                debate_id: str | None = None, error: str = "") -> None:
    """Through: submitted (or refused, the message saying why: `done`), or given up (`failed`,
    with why)."""
    await session.execute(
        update(SlackStartRow)
        .where(SlackStartRow.key == key, SlackStartRow.status == PENDING)
        .values(status=status, debate_id=debate_id, last_error=error[:2000], updated_at=now,
                claimed_by=None, claimed_until=None)
        .execution_options(synchronize_session=False))


async def any_stale(session: AsyncSession, *, now: datetime) -> bool:
    """Whether a start's lease ran out unfinished (a read, so idle processes take no lock)."""
    found = await session.scalar(
        select(SlackStartRow.key)
        .where(SlackStartRow.status == PENDING,
               or_(SlackStartRow.claimed_until.is_(None), SlackStartRow.claimed_until < now))
        .limit(1))
    return found is not None


async def claim_stale(session: AsyncSession, *, owner: str, now: datetime,
                      lease_seconds: float, limit: int) -> list[Start]:
    """Take up to `limit` unfinished starts whose lease ran out (oldest first), each attempt
    counted; rows another process is taking are skipped."""
    rows = list(await session.scalars(
        select(SlackStartRow)
        .where(SlackStartRow.status == PENDING,
               or_(SlackStartRow.claimed_until.is_(None), SlackStartRow.claimed_until < now))
        .order_by(SlackStartRow.created_at).limit(limit)
        .with_for_update(skip_locked=True).execution_options(populate_existing=True)))
    for row in rows:
        row.claimed_by = owner
        row.claimed_until = now + timedelta(seconds=lease_seconds)
        row.attempts += 1
        row.updated_at = now
    await session.flush()
    return [Start(key=r.key, place=dict(r.place), request=dict(r.request),
                  message_ts=r.message_ts, attempts=r.attempts, created_at=r.created_at)
            for r in rows]


async def status_of(session: AsyncSession, key: str) -> tuple[str, str | None] | None:
    """(status, debate id) of a start; None when there is none."""
    row = await session.get(SlackStartRow, key, populate_existing=True)
    return None if row is None else (row.status, row.debate_id)


async def purge(session: AsyncSession, *, before: datetime) -> int:
    """Forget starts that ended before `before`; how many went."""
    result = await session.execute(
        delete(SlackStartRow)
        .where(SlackStartRow.status != PENDING, SlackStartRow.updated_at < before)
        .returning(SlackStartRow.key).execution_options(synchronize_session=False))
    return len(result.all())


__all__ = ["DONE", "FAILED", "PENDING", "Intent", "Start", "any_stale", "claim_stale", "ended",
           "intend", "intend_many", "opened", "purge", "renew", "status_of"]
