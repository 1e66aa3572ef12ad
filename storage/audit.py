"""The audit log: per-debate hash chains and one global chain, append-only and verifiable.

Each link stores `hash = sha256(prev_hash + canonical_json({seq, chain, kind, actor, data, at}))`,
so altering, inserting or deleting a link in the middle of a chain breaks every later hash.
Appends to one chain are serialised: by `BEGIN IMMEDIATE` on SQLite, by a transaction-scoped
advisory lock on PostgreSQL (one lock per chain, global included, and it does not hold the
debate's row, so SKIP LOCKED claims never skip a debate only because it is being audited);
UNIQUE(chain, seq) backs both, and a lost race is retried. Engine events go through the journal's
group commit (storage/journal.py) with each chain's head remembered between batches, so a
running debate's link costs one row of a multi-row INSERT, not a lock, a read and an INSERT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, Table, and_, bindparam, delete, func, select, text
from sqlalchemy import event as sa_event
from sqlalchemy.engine.base import OptionEngine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction
from sqlalchemy.sql.dml import Insert

from engine.domain import Event, canonical_json, sha256, utcnow
from storage.db import Database, dialect_of, ignoring_insert, write
from storage.errors import Conflict
from storage.journal import AfterCommit, BatchWriter, Stale, journal_for
from storage.models import AuditEventRow, jsonable
from storage.records import AuditEvent

GENESIS_HASH = "0" * 64
GLOBAL_CHAIN = "global"
_LOCK_NAMESPACE = 0x0D1A  # first key of pg_advisory_xact_lock(int, int) for audit chains
_APPEND_ATTEMPTS = 5
#: The largest seq a chain can hold: the column is INTEGER, 32 bits on PostgreSQL. Callers
#: bound outside numbers by it; a larger `after_seq` reaching `events` reads nothing.
MAX_SEQ = 2**31 - 1


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
    heads = _heads_for_session(session)
    cached = heads.known.pop(chain, None) if heads is not None else None
    pending = _pending_head(session, chain)  # appended before in this transaction: its lock held
    cached = pending or cached
    # with the head known, PostgreSQL takes the chain's lock in the INSERT itself (one round trip)
    lock_in_insert = pending is None and cached is not None and dialect_of(session) == "postgresql"
    if pending is None and not lock_in_insert:
        await _lock_chain(session, chain)
    for _ in range(_APPEND_ATTEMPTS):
        seq, prev = cached or await _head(session, chain)   # a stale cached head: a retry
        cached = None
        event = _link(chain, debate_id, seq + 1, prev, kind, actor, payload, at)
        if await _insert(session, chain, event, lock_in_insert):
            if heads is not None:
                heads.remember_on_commit(session, chain, (event.seq, event.hash))
            return event
        lock_in_insert = False   # taken by the refused INSERT: the head is read under it
    raise Conflict(f"audit chain {chain}: lost {_APPEND_ATTEMPTS} races for the next seq",
                   constraint="uq_audit_events_chain_seq")


async def erase_chains(session: AsyncSession, debate_ids: list[str]) -> dict[str, ChainEnd]:
    """Delete the chains of `debate_ids` (their debates are being erased) and return each one's
    last link, for the caller to attest in the global chain in the same transaction: so
    `verify` still checks every chain that exists, and the erasure itself is on the record."""
    chains = sorted({chain_of(d) for d in debate_ids} - {GLOBAL_CHAIN})
    if not chains:
        return {}
    for chain in chains:
        await _lock_chain(session, chain)
    last = (select(AuditEventRow.chain, func.max(AuditEventRow.seq).label("seq"))
            .where(AuditEventRow.chain.in_(chains)).group_by(AuditEventRow.chain).subquery())
    rows = await session.execute(
        select(AuditEventRow.chain, AuditEventRow.seq, AuditEventRow.hash)
        .join(last, and_(AuditEventRow.chain == last.c.chain, AuditEventRow.seq == last.c.seq)))
    ends = {chain: ChainEnd(seq, hash_) for chain, seq, hash_ in rows}
    await session.execute(delete(AuditEventRow).where(AuditEventRow.chain.in_(chains))
                          .execution_options(synchronize_session=False))
    heads = _heads_for_session(session)
    for chain in chains:   # a cached head would continue a chain that is gone
        if heads is not None:
            heads.known.pop(chain, None)
    return ends


class ChainEnd(NamedTuple):
    """A chain's last link: how many links it had and the hash that sealed them."""

    seq: int
    hash: str


def _fields(event: Event) -> tuple[str, str, dict[str, Any], datetime]:
    payload: dict[str, Any] = jsonable({**event.data, "rehearsal": event.rehearsal})
    actor = str(event.data.get("actor") or "engine")
    return event.kind.value, actor, payload, event.at.astimezone(UTC)


async def _head(session: AsyncSession, chain: str) -> tuple[int, str]:
    last = (await write(session, _HEAD, {"chain": chain})).first()
    return (last.seq, last.hash) if last is not None else (0, GENESIS_HASH)


_LINKS = cast(Table, AuditEventRow.__table__)
#: a chain's last link (built once: `write`)
_HEAD = (select(_LINKS.c.seq, _LINKS.c.hash).where(_LINKS.c.chain == bindparam("chain"))
         .order_by(_LINKS.c.seq.desc()).limit(1))


def _link(chain: str, debate_id: str | None, seq: int, prev: str, kind: str, actor: str,
          payload: dict[str, Any], at: datetime) -> AuditEvent:
    return AuditEvent(
        seq=seq, debate_id=debate_id, kind=kind, actor=actor, data=payload, at=at,
        prev_hash=prev,
        hash=link_hash(prev, seq=seq, chain=chain, kind=kind, actor=actor, data=payload, at=at),
    )


async def _insert(session: AsyncSession, chain: str, event: AuditEvent, lock: bool) -> bool:
    stmt = _locking_insert() if lock else ignoring_insert(
        session, AuditEventRow, conflict=_CHAIN_SEQ, returning=("id",))
    inserted = await write(session, stmt, {"chain": chain, **event.model_dump()})
    return inserted.scalar_one_or_none() is not None


def _locking_insert() -> Insert:
    """PostgreSQL: the chain's advisory lock and the link's INSERT ... ON CONFLICT DO NOTHING in
    one statement. The lock is taken (in the CTE the row is selected from) before the row is
    inserted, and the conflict check sees what was committed before the lock was granted, so a
    stale head is refused as it is after a separate lock; built once."""
    global _LOCKING_INSERT
    if _LOCKING_INSERT is None:
        from sqlalchemy.dialects import postgresql  # with its drivers: on PostgreSQL only

        values = {c.name: bindparam(c.name, type_=c.type) for c in _LINKS.c if c.name != "id"}
        lock = select(func.pg_advisory_xact_lock(_LOCK_NAMESPACE, func.hashtext(values["chain"]))
                      .label("locked")).cte("chain_lock")
        _LOCKING_INSERT = (postgresql.insert(_LINKS)
                           .from_select(list(values), select(*values.values()).select_from(lock))
                           .on_conflict_do_nothing(index_elements=list(_CHAIN_SEQ))
                           .returning(_LINKS.c.id))
    return _LOCKING_INSERT


_LOCKING_INSERT: Insert | None = None


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
    if after_seq >= MAX_SEQ:  # nothing lies beyond, and the driver could not bind it
        return []
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

    Written through the journal's group commit (storage/journal.py): events emitted while a write
    is in flight (many debates at once) share the next transaction, with those debates' steps and
    spend. Each `emit` still returns only after its own event is committed."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._heads = _heads_for(db)

    async def emit(self, event: Event) -> None:
        await journal_for(self.db).write(*self.write_of(event))

    async def emit_all(self, events: Sequence[Event]) -> None:
        """Several events' links in one transaction (with other debates' writes, maybe)."""
        await journal_for(self.db).write_together([self.write_of(event) for event in events])

    def write_of(self, event: Event) -> tuple[BatchWriter, Any]:
        """`emit` as a journal write, for a caller that submits it with others."""
        return self._heads.append_events, event


MAX_CACHED_CHAINS = 20_000


class _ChainHeads:
    """The last link of each chain this process appended to, so a batch need not read (and on
    PostgreSQL lock) each chain's head again. A stale head costs nothing but a retry: UNIQUE
    (chain, seq) refuses the link, and the batch is written again from the chain as stored."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[int, str]] = {}
        self.stale: set[str] = set()

    async def append_events(self, session: AsyncSession, events: list[Event], fresh: bool
                            ) -> tuple[list[None], AfterCommit]:
        """Append engine events in chain order, as one multi-row INSERT (the journal's batch
        function)."""
        if fresh:
            for chain in self.stale:
                self.known.pop(chain, None)
            self.stale.clear()
        heads: dict[str, tuple[int, str]] = {}
        rows: list[dict[str, Any]] = []
        for event in sorted(events, key=lambda e: chain_of(e.debate_id)):  # stable: order kept
            chain = chain_of(event.debate_id)
            if chain not in heads:
                heads[chain] = self.known.get(chain) or await _locked_head(session, chain)
            kind, actor, payload, at = _fields(event)
            seq, prev = heads[chain]
            # the row `_link(...).model_dump()` gives, without validating and copying the
            # payload twice (it is plain JSON data already)
            digest = link_hash(prev, seq=seq + 1, chain=chain, kind=kind, actor=actor,
                               data=payload, at=at)
            rows.append({"chain": chain, "seq": seq + 1, "debate_id": event.debate_id,
                         "kind": kind, "actor": actor, "data": payload, "at": at,
                         "prev_hash": prev, "hash": digest})
            heads[chain] = (seq + 1, digest)
        went_in = await write(
            session, ignoring_insert(session, AuditEventRow, conflict=_CHAIN_SEQ,
                                     returning=_CHAIN_SEQ), rows)
        missing = {(r["chain"], r["seq"]) for r in rows} - {(c, q) for c, q in went_in}
        if missing:  # another writer appended to these chains since we cached their heads
            self.stale.update(chain for chain, _ in missing)
            raise Stale(f"audit chains moved on: {sorted({c for c, _ in missing})[:3]}")

        def remember() -> None:
            if len(self.known) > MAX_CACHED_CHAINS:
                self.known.clear()
            self.known.update(heads)
        return [None] * len(events), remember

    def remember_on_commit(self, session: AsyncSession, chain: str, head: tuple[int, str]
                           ) -> None:
        """`chain`'s head once the caller's transaction commits. A head remembered ahead of
        the stored chain would leave a gap (UNIQUE(chain, seq) cannot refuse it), so a
        rollback, even of a savepoint, forgets every head the session has pending."""
        session.info.setdefault(_PENDING_HEADS, []).append((self, chain, head))


def _pending_head(session: AsyncSession, chain: str) -> tuple[int, str] | None:
    """The head of `chain` this transaction appended last (it holds the chain's lock)."""
    for _, pending_chain, head in reversed(session.info.get(_PENDING_HEADS, ())):
        if pending_chain == chain:
            return head  # type: ignore[no-any-return]
    return None


async def _locked_head(session: AsyncSession, chain: str) -> tuple[int, str]:
    await _lock_chain(session, chain)
    return await _head(session, chain)


_CHAIN_SEQ = ("chain", "seq")
_HEADS: WeakKeyDictionary[Engine, _ChainHeads] = WeakKeyDictionary()


def _heads_for(db: Database) -> _ChainHeads:
    """The heads this process knows on `db` (one cache per engine: the journal's appends and
    the direct ones of the same database share it)."""
    return _heads_of(db.engine.sync_engine)


def _heads_of(engine: Engine) -> _ChainHeads:
    heads = _HEADS.get(engine)
    if heads is None:
        heads = _HEADS[engine] = _ChainHeads()
    return heads


def _heads_for_session(session: AsyncSession) -> _ChainHeads | None:
    """The heads this process knows on the session's database, started at its first append:
    a debate submitted, claimed and run in one process reads its chain's head at most once,
    the first engine event included (a worker that claims before any debate has run used to
    read it three times). None for a session bound to a connection or to an engine with options
    (the read-only and autocommit ones, which append nothing)."""
    bind = session.get_bind()
    if not isinstance(bind, Engine) or isinstance(bind, OptionEngine):
        return None
    return _heads_of(bind)


#: session.info key: (cache, chain, head) of the links appended in the open transaction
_PENDING_HEADS = "dialectic.audit.pending_heads"


@sa_event.listens_for(Session, "after_commit")
def _heads_committed(session: Session) -> None:
    if session.in_nested_transaction():  # a savepoint released: the transaction goes on
        return
    for heads, chain, head in session.info.pop(_PENDING_HEADS, ()):
        heads.known[chain] = head


@sa_event.listens_for(Session, "after_soft_rollback")
def _heads_rolled_back(session: Session, _transaction: SessionTransaction) -> None:
    session.info.pop(_PENDING_HEADS, None)


@sa_event.listens_for(Session, "after_transaction_end")
def _heads_abandoned(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # closed without a commit (a commit took its heads)
        session.info.pop(_PENDING_HEADS, None)
