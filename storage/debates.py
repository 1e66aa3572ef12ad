"""Debates: create, read, and move through the lifecycle; every status change is audited.

`transition()` is the only way a status changes: it locks the row, checks
`engine.domain.can_transition`, applies the given fields and appends a `status_changed` link to
the debate's audit chain, all in the caller's transaction.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, cast

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import ColumnElement, Table, bindparam, func, inspect, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.sql.dml import Update

from engine.domain import DebateRequest, DebateResult, canonical_json, sha256, utcnow
from engine.untrusted.injection import Finding, summary
from storage import audit
from storage.db import Database, write
from storage.errors import AlreadyExists, IllegalTransition, NotFound, translate
from storage.journal import journal_for
from storage.models import DebateRow, jsonable
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Origin, can_transition
from storage.tenancy import Workspace, may_see, owned_by

# What transition(**fields) may set besides the status.
MUTABLE_FIELDS = frozenset({
    "result", "error", "cost_usd", "estimate_usd", "reserved_usd", "started_at", "finished_at",
    "origin", "lease_owner", "lease_expires_at", "attempts", "cached_from", "downgraded_from",
})
FLAGGED = "injection_flagged"  # the audit event of text addressed to the AI
#: results the cache may answer with (docs/caching-and-replay.md): one awaiting review is returned
#: as it stands, marked awaiting review; a failed, timed-out or escalated one never
CACHEABLE_STATUSES = (DebateStatus.COMPLETED.value, DebateStatus.APPROVED.value,
                      DebateStatus.AWAITING_REVIEW.value)
_FINISHED = TERMINAL_STATUSES | {DebateStatus.AWAITING_REVIEW}
_SPACE = re.compile(r"\s+")
MAX_ID_CHARS = 64   # the id column's width: a longer "id" is no debate's
_FINDINGS = TypeAdapter(list[Finding])
_HELD = "dialectic.held_debates"  # session.info: (transaction, {id: row locked in it})


def in_oversight() -> ColumnElement[bool]:
    """`Origin.in_oversight` as a condition on `DebateRow`: not an evaluation's debate, or one
    whose run asked to be reviewed (`eval --review`)."""
    return or_(func.coalesce(DebateRow.origin["surface"].as_string(), "") != "eval",
               DebateRow.origin["evaluation_review"].as_boolean().is_(True))


def topic_key(request: DebateRequest, preset: str, *, scope: str = "") -> str:
    """The cache key of a request: normalised topic and context, mode, preset, rounds, judges,
    and `scope`, what the caller says must also match (bot/service/reuse.py: the endpoint, the
    models, the prompt version, rehearsal or real)."""
    def norm(text: str) -> str:
        return _SPACE.sub(" ", text).strip().casefold().rstrip("?.!")

    parts = [norm(request.topic), request.mode, preset, request.rounds, request.judges,
             norm(request.context), scope]
    return sha256(canonical_json(parts))


def to_record(row: DebateRow) -> DebateRecord:
    return DebateRecord(
        id=row.id, request=DebateRequest.stored(row.request), mode=row.mode,
        preset=row.preset, status=DebateStatus(row.status),
        origin=Origin.model_validate(row.origin), requested_by=row.requested_by,
        estimate_usd=row.estimate_usd, reserved_usd=row.reserved_usd, cost_usd=row.cost_usd,
        result=DebateResult.model_validate(row.result) if row.result is not None else None,
        error=row.error, attempts=row.attempts, parent_id=row.parent_id,
        reused_steps=tuple(row.reused_steps or ()), cached_from=row.cached_from,
        downgraded_from=row.downgraded_from,
        lease_owner=row.lease_owner, lease_expires_at=row.lease_expires_at,
        created_at=row.created_at, updated_at=row.updated_at, started_at=row.started_at,
        finished_at=row.finished_at, injection=_FINDINGS.validate_python(row.injection or []),
    )


def _column_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    return value


def _new_row(record: DebateRecord, topic_key: str, idempotency_key: str | None) -> DebateRow:
    return DebateRow(
        id=record.id, topic=record.request.topic, mode=record.mode, preset=record.preset,
        status=record.status.value, request=_column_value(record.request),
        origin=_column_value(record.origin),
        requested_by=record.requested_by or record.request.requested_by,
        estimate_usd=record.estimate_usd, reserved_usd=record.reserved_usd,
        cost_usd=record.cost_usd, result=_column_value(record.result), error=record.error,
        attempts=record.attempts, parent_id=record.parent_id,
        reused_steps=list(record.reused_steps) if record.reused_steps else None,
        cached_from=record.cached_from,
        downgraded_from=record.downgraded_from, topic_key=topic_key,
        lease_owner=record.lease_owner, lease_expires_at=record.lease_expires_at,
        created_at=record.created_at, updated_at=record.updated_at,
        started_at=record.started_at, finished_at=record.finished_at,
        idempotency_key=idempotency_key, injection=_findings_value(record.injection),
    )


def _findings_value(findings: list[Finding]) -> list[dict[str, Any]] | None:
    return jsonable([f.as_dict() for f in findings]) if findings else None


async def create(
    session: AsyncSession, *, record: DebateRecord, topic_key: str,
    idempotency_key: str | None = None,
) -> DebateRecord:
    """Insert the debate and the first link of its audit chain (`debate_created`).

    Raises AlreadyExists (with `existing_id`) when the id or the idempotency key is taken.
    """
    row = _new_row(record, topic_key, idempotency_key)
    try:
        async with session.begin_nested():  # a duplicate must not poison the caller's transaction
            session.add(row)
            await session.flush()
    except IntegrityError as exc:
        error = translate(exc)
        if not isinstance(error, AlreadyExists):
            raise error from exc
        holder = record.id
        if idempotency_key is not None and error.constraint == "uq_debates_idempotency_key":
            holder = await session.scalar(
                select(DebateRow.id).where(DebateRow.idempotency_key == idempotency_key)
            ) or holder
        raise AlreadyExists(f"debate already exists: {holder}", constraint=error.constraint,
                            existing_id=holder) from exc
    await audit.append(
        session, debate_id=row.id, kind="debate_created", actor=row.requested_by or "service",
        data={"status": row.status, "mode": row.mode, "preset": row.preset, "topic": row.topic,
              "estimate_usd": row.estimate_usd, "parent_id": row.parent_id,
              "cached_from": row.cached_from, "downgraded_from": row.downgraded_from},
        at=row.created_at,
    )
    return to_record(row)


async def _load(session: AsyncSession, debate_id: str, *, lock: bool) -> DebateRow:
    if "\x00" in debate_id:  # no id holds one, and PostgreSQL refuses to compare with it
        raise NotFound("debate", debate_id.replace("\x00", "\\x00"))
    row = _held(session, debate_id)
    if row is not None:  # locked by this transaction: nobody else can have changed it
        return row
    row = await session.scalar(_LOCKED if lock else _READ, {"debate_id": debate_id})
    if row is None:
        raise NotFound("debate", debate_id)
    if lock:
        hold(session, row)
    return row


#: statements built once (their values passed as parameters: docs/benchmarks.md)
_READ = (select(DebateRow).where(DebateRow.id == bindparam("debate_id"))
         .execution_options(populate_existing=True))
_LOCKED = _READ.with_for_update()
_DEBATES = cast(Table, DebateRow.__table__)
_ADVANCE = (update(_DEBATES).where(_DEBATES.c.id == bindparam("debate_id"),
                                   _DEBATES.c.status == bindparam("source"))
            .values(status=bindparam("to"), updated_at=bindparam("now"))
            .returning(_DEBATES.c.id))


def hold(session: AsyncSession, row: DebateRow) -> None:
    """Remember that this transaction locked `row` (SELECT ... FOR UPDATE; on SQLite the writer
    holds the database): later reads of it in the same transaction need no statement."""
    transaction = session.sync_session.get_transaction()
    held: tuple[object, dict[str, DebateRow]] | None = session.info.get(_HELD)
    if held is None or held[0] is not transaction:
        held = session.info[_HELD] = (transaction, {})
    held[1][row.id] = row


def _held(session: AsyncSession, debate_id: str) -> DebateRow | None:
    held: tuple[object, dict[str, DebateRow]] | None = session.info.get(_HELD)
    if held is None or held[0] is not session.sync_session.get_transaction():
        return None  # none yet, or locked by an earlier transaction of the session
    row = held[1].get(debate_id)
    if row is None or inspect(row).expired_attributes:
        return None  # a rolled-back savepoint expired it: read it again
    return row


async def get(session: AsyncSession, debate_id: str, *, for_update: bool = False
              ) -> DebateRecord:
    """The debate; `for_update` locks its row until the transaction ends (a transition to come
    then reads no more)."""
    return to_record(await _load(session, debate_id, lock=for_update))


async def visible(session: AsyncSession, debate_id: str, workspace: Workspace | None, *,
                  operator: bool = False) -> DebateRecord | None:
    """The debate, if a person of `workspace` may see it (storage/tenancy.py: its own
    workspace's); None for an unknown or malformed id, another workspace's or the operator's
    debate, or no workspace at all. `operator`: the operator's own surfaces, any debate."""
    if not debate_id or len(debate_id) > MAX_ID_CHARS:
        return None
    row = await session.get(DebateRow, debate_id, populate_existing=True)
    if row is None:
        return None
    record = to_record(row)
    return record if operator or may_see(workspace, record.origin) else None


async def exists(session: AsyncSession, debate_id: str) -> bool:
    found = await session.scalar(select(DebateRow.id).where(DebateRow.id == debate_id))
    return found is not None


async def list_recent(
    session: AsyncSession, *, status: str | None = None, limit: int = 50,
    requested_by: str | None = None, workspace: Workspace | None = None,
) -> list[DebateRecord]:
    """Newest first, optionally one status, one requester, and only what `workspace` may see
    (None: every debate, for the operator's surfaces)."""
    stmt = select(DebateRow).order_by(DebateRow.created_at.desc(), DebateRow.id.desc())
    if workspace is not None:
        stmt = stmt.where(owned_by(workspace))
    if status is not None:
        stmt = stmt.where(DebateRow.status == status)
    if requested_by is not None:
        stmt = stmt.where(DebateRow.requested_by == requested_by)
    rows = await session.scalars(stmt.limit(limit))
    return [to_record(row) for row in rows]


async def judge_ratings(session: AsyncSession, *, limit: int = 50
                        ) -> list[dict[str, list[float | None]]]:
    """The judges' ratings (`result.consensus.ratings`) of the newest `limit` debates, newest
    first, of those that count in oversight, had a panel and were no rehearsal: what judge
    calibration reads, taken from the stored results without building their records (a run of
    a mode with panel statistics reads them before its first call)."""
    stmt = (select(DebateRow.result, DebateRow.origin)
            .order_by(DebateRow.created_at.desc(), DebateRow.id.desc()).limit(limit))
    found: list[dict[str, list[float | None]]] = []
    for result, origin in (await session.execute(stmt)).all():
        consensus = (result or {}).get("consensus")
        if (not consensus or result.get("rehearsal")
                or not Origin.model_validate(origin).in_oversight):
            continue
        found.append(consensus.get("ratings") or {})
    return found


def _checked(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` as column values; TypeError for a field `transition` may not set."""
    unknown = set(fields) - MUTABLE_FIELDS
    if unknown:
        raise TypeError(f"cannot set debate fields {sorted(unknown)}; allowed: "
                        f"{sorted(MUTABLE_FIELDS)}")
    return {name: _column_value(value) for name, value in fields.items()}


async def _write_fields(session: AsyncSession, row: DebateRow, values: dict[str, Any]) -> None:
    """Write `values` to the locked `row`, and into the row as the database now holds them: one
    UPDATE built once per set of columns, without the ORM's unit of work (a flush of one row
    cost about as much as the rest of a transition). Inside a savepoint the ORM writes it, so
    that the savepoint's rollback expires the row as it would any row changed in it."""
    if session.in_nested_transaction():
        for name, value in values.items():
            setattr(row, name, value)
        await session.flush()
        return
    names = tuple(sorted(values))
    moved = await write(session, _fields_update(names),
                        {"debate_id": row.id, **{f"new_{n}": values[n] for n in names}})
    if moved.first() is None:   # locked by this transaction: it cannot have gone
        raise NotFound("debate", row.id)
    for name in names:
        set_committed_value(row, name, values[name])


def _fields_update(names: tuple[str, ...]) -> Update:
    stmt = _FIELDS_UPDATES.get(names)
    if stmt is None:
        stmt = _FIELDS_UPDATES[names] = (
            update(_DEBATES).where(_DEBATES.c.id == bindparam("debate_id"))
            .values({n: bindparam(f"new_{n}", type_=_DEBATES.c[n].type) for n in names})
            .returning(_DEBATES.c.id))
    return stmt


_FIELDS_UPDATES: dict[tuple[str, ...], Update] = {}


async def transition(
    session: AsyncSession, debate_id: str, to: DebateStatus, *, actor: str, reason: str = "",
    **fields: Any,
) -> DebateRecord:
    """Move the debate to `to` (IllegalTransition if the lifecycle forbids it), set `fields`,
    and audit `status_changed` {from, to, reason}. Entering a finished status stamps
    `finished_at` and clears the lease; going back to queued clears the lease and `finished_at`
    (fields given explicitly win)."""
    return await _move(session, debate_id, to, None, actor, reason, fields)


async def transition_then(
    session: AsyncSession, debate_id: str, to: DebateStatus, then: DebateStatus | None, *,
    actor: str, reason: str = "", then_reason: str = "", **fields: Any,
) -> DebateRecord:
    """`transition` to the finished status `to`, then (unless None) on to the finished status
    `then` in the same UPDATE, audited as the two transitions it is made of (a finish routed to
    its reviewers: one write of the row, not two)."""
    return await _move(session, debate_id, to, None if then is None else (then, then_reason),
                       actor, reason, fields)


async def _move(session: AsyncSession, debate_id: str, to: DebateStatus,
                then: tuple[DebateStatus, str] | None, actor: str, reason: str,
                fields: dict[str, Any]) -> DebateRecord:
    to = DebateStatus(to)
    row = await _load(session, debate_id, lock=True)
    current = DebateStatus(row.status)
    moves = [(current, to, reason)] if then is None else [(current, to, reason),
                                                           (to, DebateStatus(then[0]), then[1])]
    for source, target, _ in moves:
        if not can_transition(source, target):
            raise IllegalTransition(debate_id, source.value, target.value)
    if then is not None and not {to, moves[-1][1]} <= _FINISHED:
        raise ValueError("transition_then moves from one finished status to another")
    now = utcnow()
    if to in _FINISHED:
        fields = {"finished_at": row.finished_at or now, "lease_owner": None,
                  "lease_expires_at": None, **fields}
    elif to is DebateStatus.QUEUED:
        fields = {"lease_owner": None, "lease_expires_at": None, "finished_at": None, **fields}
    await _write_fields(session, row, {**_checked(fields), "status": moves[-1][1].value,
                                       "updated_at": now})
    for source, target, why in moves:
        await audit.append(
            session, debate_id=debate_id, kind="status_changed", actor=actor,
            data={"from": source.value, "to": target.value, "reason": why}, at=now,
        )
    return to_record(row)


async def advance(session: AsyncSession, debate_id: str, source: DebateStatus, to: DebateStatus,
                  *, actor: str, reason: str = "") -> bool:
    """`transition` from `source` only, to a status that stamps nothing else (not queued, not
    finished), in one conditional UPDATE with no read: False, and nothing written, when the
    debate is not (or no longer) in `source`. Audited as `transition` audits."""
    _advancing(debate_id, source, to)
    now = utcnow()
    moved = await write(session, _ADVANCE, {"debate_id": debate_id, "source": source.value,
                                            "to": to.value, "now": now})
    if moved.first() is None:
        return False
    await audit.append(
        session, debate_id=debate_id, kind="status_changed", actor=actor,
        data={"from": source.value, "to": to.value, "reason": reason}, at=now,
    )
    return True


async def advance_soon(db: Database, debate_id: str, source: DebateStatus, to: DebateStatus,
                       *, actor: str, reason: str = "") -> bool:
    """`advance` in the journal's next transaction, with the other running debates' writes of
    the moment (storage/journal.py): a busy `serve` moved each debate to judging in a
    transaction of its own (~2.5 % of its CPU at 1,000 debates). Committed when it returns."""
    _advancing(debate_id, source, to)   # refused here: one debate's error fails no batch
    return cast(bool, await journal_for(db).write(
        _advance_batch, (debate_id, source, to, actor, reason)))


def _advancing(debate_id: str, source: DebateStatus, to: DebateStatus) -> None:
    if not can_transition(source, to) or to in _FINISHED or to is DebateStatus.QUEUED:
        raise IllegalTransition(debate_id, source.value, to.value)


async def _advance_batch(session: AsyncSession,
                         moves: list[tuple[str, DebateStatus, DebateStatus, str, str]],
                         fresh: bool) -> tuple[list[bool], None]:
    return [await advance(session, debate_id, source, to, actor=actor, reason=reason)
            for debate_id, source, to, actor, reason in moves], None


async def update_origin(session: AsyncSession, debate_id: str, origin: Origin) -> DebateRecord:
    """Where updates go (e.g. the status message's ts once posted); not a status change."""
    row = await _load(session, debate_id, lock=True)
    row.origin = _column_value(origin)
    row.updated_at = utcnow()
    await session.flush()
    return to_record(row)


async def flag(session: AsyncSession, debate_id: str, findings: list[Finding], *, stage: str,
               actor: str) -> list[Finding]:
    """Flag the debate with the `findings` (text addressed to the AI) it does not carry yet,
    and audit them as `injection_flagged` with the `stage` that found them (submit, evidence,
    run). Returns those new findings. Not a status change."""
    if not findings:  # the common case: nothing to read or write
        return []
    row = await _load(session, debate_id, lock=True)
    known = to_record(row).injection
    fresh = [f for f in dict.fromkeys(findings) if f not in known]
    if not fresh:
        return []
    row.injection = _findings_value([*known, *fresh])
    row.updated_at = utcnow()
    await session.flush()
    await audit.append(session, debate_id=debate_id, kind=FLAGGED, actor=actor, data={
        "stage": stage, "summary": summary(fresh), "findings": [f.as_dict() for f in fresh]})
    return fresh


async def find_cached(
    session: AsyncSession, *, topic_key: str, since: datetime
) -> DebateRecord | None:
    """The newest completed, approved or awaiting-review debate with this key created at or
    after `since`."""
    row = await session.scalar(
        select(DebateRow)
        .where(DebateRow.topic_key == topic_key, DebateRow.created_at >= since,
               DebateRow.status.in_(CACHEABLE_STATUSES), DebateRow.result.is_not(None))
        .order_by(DebateRow.created_at.desc()).limit(1)
    )
    return to_record(row) if row is not None else None


async def find_cached_many(session: AsyncSession, asked: list[tuple[str, datetime]],
                           fresh: bool = False) -> tuple[list[DebateRecord | None], None]:
    """`find_cached` for each (topic key, since), each distinct one read once; the batch-read
    shape of storage/journal.py (the estimates of a burst of /debate acks share a transaction)."""
    found: dict[tuple[str, datetime], DebateRecord | None] = {}
    for key, since in asked:
        if (key, since) not in found:
            found[key, since] = await find_cached(session, topic_key=key, since=since)
    return [found[key, since] for key, since in asked], None

async def requests_of(session: AsyncSession, debate_ids: set[str]) -> dict[str, DebateRequest]:
    """The requests of these debates, by id (one query, the request column only)."""
    if not debate_ids:
        return {}
    rows = await session.execute(select(DebateRow.id, DebateRow.request)
                                 .where(DebateRow.id.in_(debate_ids)))
    return {row.id: DebateRequest.stored(row.request) for row in rows}
