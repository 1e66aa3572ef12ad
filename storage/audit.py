"""The audit log: per-debate hash chains and one global chain, append-only and verifiable.

Each link stores `hash = sha256(prev_hash + canonical_json({seq, chain, kind, actor, data, at}))`,
so altering, inserting or deleting a link in the middle of a chain breaks every later hash.
Appends to one chain are serialised: by `BEGIN IMMEDIATE` on SQLite, by a transaction-scoped
advisory lock on PostgreSQL (one lock per chain, global included, and it does not hold the
debate's row, so SKIP LOCKED claims never skip a debate only because it is being audited);
UNIQUE(chain, seq) backs both, and a lost race is retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import Event, canonical_json, sha256, utcnow
from storage.db import Database, dialect_of, insert_ignoring
from storage.errors import DATABASE_ERRORS, Conflict
from storage.models import AuditEventRow, jsonable
from storage.records import AuditEvent

GENESIS_HASH = "0" * 64
GLOBAL_CHAIN = "global"
_LOCK_NAMESPACE = 0x0D1A  # first key of pg_advisory_xact_lock(int, int) for audit chains
_APPEND_ATTEMPTS = 5


def chain_of(debate_id: str | None) -> str:
    return debate_id or GLOBAL_CHAIN


def link_hash(
    prev_hash: str, *, seq: int, chain: str, kind: str, actor: str, data: Mapping[str, Any],
    at: datetime,
) -> str:
    body = {"seq": seq, "chain": chain, "kind": kind, "actor": actor, "data": data,
            "at": at.astimezone(UTC).isoformat()}
    return sha256(prev_hash + canonical_json(body))


async def append(
    session: AsyncSession, *, debate_id: str | None, kind: str, actor: str,
    data: Mapping[str, Any] | None = None, at: datetime | None = None,
) -> AuditEvent:
    """Add a link to the debate's chain (or the global one) in the caller's transaction."""
    chain = chain_of(debate_id)
    payload: dict[str, Any] = jsonable(dict(data or {}))
    at = (at or utcnow()).astimezone(UTC)
    await _lock_chain(session, chain)
    for _ in range(_APPEND_ATTEMPTS):
        seq, prev = await _head(session, chain)
        event = _link(chain, debate_id, seq + 1, prev, kind, actor, payload, at)
        if await _insert(session, chain, event):
            return event
    raise Conflict(f"audit chain {chain}: lost {_APPEND_ATTEMPTS} races for the next seq",
                   constraint="uq_audit_events_chain_seq")


async def append_many(session: AsyncSession, events: list[Event]) -> None:
    """Append engine events in the caller's transaction, in chain order (so two writers lock
    PostgreSQL's per-chain advisory locks in one order) with each chain's head read once."""
    heads: dict[str, tuple[int, str]] = {}
    for event in sorted(events, key=lambda e: chain_of(e.debate_id)):  # stable: order kept
        chain = chain_of(event.debate_id)
        if chain not in heads:
            await _lock_chain(session, chain)
            heads[chain] = await _head(session, chain)
        kind, actor, payload, at = _fields(event)
        seq, prev = heads[chain]
        link = _link(chain, event.debate_id, seq + 1, prev, kind, actor, payload, at)
        if not await _insert(session, chain, link):  # not while we hold the chain; be safe
            link = await append(session, debate_id=event.debate_id, kind=kind, actor=actor,
                                data=payload, at=at)
        heads[chain] = (link.seq, link.hash)


def _fields(event: Event) -> tuple[str, str, dict[str, Any], datetime]:
    payload: dict[str, Any] = jsonable({**event.data, "rehearsal": event.rehearsal})
    actor = str(event.data.get("actor") or "engine")
    return event.kind.value, actor, payload, event.at.astimezone(UTC)


async def _head(session: AsyncSession, chain: str) -> tuple[int, str]:
    last = (await session.execute(
        select(AuditEventRow.seq, AuditEventRow.hash)
        .where(AuditEventRow.chain == chain).order_by(AuditEventRow.seq.desc()).limit(1)
    )).first()
    return (last.seq, last.hash) if last is not None else (0, GENESIS_HASH)


def _link(chain: str, debate_id: str | None, seq: int, prev: str, kind: str, actor: str,
          payload: dict[str, Any], at: datetime) -> AuditEvent:
    return AuditEvent(
        seq=seq, debate_id=debate_id, kind=kind, actor=actor, data=payload, at=at,
        prev_hash=prev,
        hash=link_hash(prev, seq=seq, chain=chain, kind=kind, actor=actor, data=payload, at=at),
    )


async def _insert(session: AsyncSession, chain: str, event: AuditEvent) -> bool:
    inserted = await session.execute(
        insert_ignoring(session, AuditEventRow, {"chain": chain, **event.model_dump()},
                        conflict=("chain", "seq")).returning(AuditEventRow.id)
    )
    return inserted.scalar_one_or_none() is not None


async def _lock_chain(session: AsyncSession, chain: str) -> None:
    if dialect_of(session) == "postgresql":
        await session.execute(
            text("SELECT pg_advisory_xact_lock(:namespace, hashtext(:chain))"),
            {"namespace": _LOCK_NAMESPACE, "chain": chain},
        )


async def events(
    session: AsyncSession, debate_id: str | None, *, after_seq: int = 0, limit: int = 500
) -> list[AuditEvent]:
    """A chain's links after `after_seq`, oldest first (what the SSE stream tails)."""
    rows = await session.scalars(
        select(AuditEventRow)
        .where(AuditEventRow.chain == chain_of(debate_id), AuditEventRow.seq > after_seq)
        .order_by(AuditEventRow.seq).limit(limit)
    )
    return [_to_event(row) for row in rows]


def _to_event(row: AuditEventRow) -> AuditEvent:
    return AuditEvent(
        seq=row.seq, debate_id=row.debate_id, kind=row.kind, actor=row.actor, data=row.data,
        at=row.at, prev_hash=row.prev_hash, hash=row.hash,
    )


class BrokenLink(NamedTuple):
    chain: str
    seq: int
    reason: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    chains_checked: int
    events_checked: int
    first_broken: BrokenLink | None = None
    broken_chains: tuple[str, ...] = ()


class _ChainWalk:
    """Follows one chain link by link; remembers the first break."""

    def __init__(self, chain: str) -> None:
        self.chain = chain
        self.expected_seq = 1
        self.prev_hash = GENESIS_HASH
        self.broken: BrokenLink | None = None

    def feed(self, row: Any) -> None:
        if self.broken is None:
            reason = self._check(row)
            if reason is not None:
                seq = min(row.seq, self.expected_seq)
                self.broken = BrokenLink(self.chain, seq, reason)
        self.expected_seq = row.seq + 1
        self.prev_hash = row.hash

    def _check(self, row: Any) -> str | None:
        if row.chain != chain_of(row.debate_id):
            return f"debate_id {row.debate_id!r} does not belong to chain {row.chain!r}"
        if row.seq != self.expected_seq:
            return f"seq {self.expected_seq} is missing (deleted?); next link is {row.seq}"
        if row.prev_hash != self.prev_hash:
            return "prev_hash does not match the previous link's hash"
        actual = link_hash(row.prev_hash, seq=row.seq, chain=row.chain, kind=row.kind,
                           actor=row.actor, data=row.data, at=row.at)
        if actual != row.hash:
            return "hash does not match the link's content (altered)"
        return None


async def verify(session: AsyncSession, debate_id: str | None = None) -> VerifyReport:
    """Recompute every chain, or only `debate_id`'s ("global" for the global one)."""
    stmt = select(
        AuditEventRow.chain, AuditEventRow.debate_id, AuditEventRow.seq, AuditEventRow.kind,
        AuditEventRow.actor, AuditEventRow.data, AuditEventRow.at, AuditEventRow.prev_hash,
        AuditEventRow.hash,
    ).order_by(AuditEventRow.chain, AuditEventRow.seq)
    if debate_id is not None:
        stmt = stmt.where(AuditEventRow.chain == debate_id)
    walks: list[_ChainWalk] = []
    checked = 0
    result = await session.stream(stmt.execution_options(yield_per=500))
    async for row in result:
        if not walks or walks[-1].chain != row.chain:
            walks.append(_ChainWalk(row.chain))
        walks[-1].feed(row)
        checked += 1
    broken = [walk.broken for walk in walks if walk.broken is not None]
    return VerifyReport(
        ok=not broken, chains_checked=len(walks), events_checked=checked,
        first_broken=broken[0] if broken else None,
        broken_chains=tuple(link.chain for link in broken),
    )


class DbEventSink:
    """engine.ports.EventSink: each engine event becomes a link of its debate's chain.

    Group commit: events emitted while a write is in flight (many debates at once) share the
    next transaction. Each `emit` still returns only after its own event is committed, so the
    audit log is as durable as before; under load it costs a fraction of the transactions."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._group = _group_for(db)

    async def emit(self, event: Event) -> None:
        await self._group.write(event)


MAX_BATCH = 200
_GROUPS: WeakKeyDictionary[Database, _GroupCommit] = WeakKeyDictionary()


def _group_for(db: Database) -> _GroupCommit:
    group = _GROUPS.get(db)
    if group is None:
        group = _GROUPS[db] = _GroupCommit(db)
    return group


class _GroupCommit:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.pending: list[tuple[Event, asyncio.Future[None]]] = []
        self.flusher: asyncio.Task[None] | None = None

    async def write(self, event: Event) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append((event, done))
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self._flush(), name="audit-group-commit")
        await asyncio.shield(done)  # a cancelled emitter's event is still written

    async def _flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending[:MAX_BATCH], self.pending[MAX_BATCH:]
            try:
                async with self.db.transaction() as session:
                    await append_many(session, [event for event, _ in batch])
            except DATABASE_ERRORS:
                await self._one_by_one(batch)  # one bad event must not sink the others
                continue
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _one_by_one(self, batch: list[tuple[Event, asyncio.Future[None]]]) -> None:
        for event, done in batch:
            try:
                async with self.db.transaction() as session:
                    await append_many(session, [event])
            except DATABASE_ERRORS as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(None)
