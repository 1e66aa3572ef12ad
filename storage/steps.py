"""Checkpointed steps: each LLM call's outcome, stored once per (debate, key).

UNIQUE(debate_id, key) makes "no step is executed twice" a constraint rather than a hope: the
second writer of a key gets the first writer's record back, on any worker. The one exception is
a degraded record (the engine retries those), which a real outcome replaces.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from sqlalchemy import Row, Table, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import StepRecord, Usage
from engine.money.sizing import Observed, step_kind
from engine.vocabulary import StepStatus
from storage.arrays import PerDialect, among
from storage.db import Database, ignoring_insert, write
from storage.errors import NotFound
from storage.journal import AfterCommit, BatchWriter, journal_for, lookups_for
from storage.models import StepRow, jsonable

_DEGRADED = "degraded"
_KEY = ("debate_id", "key")


def to_step(row: StepRow | Row[Any]) -> StepRecord:
    return StepRecord(
        key=row.key, role=row.role, phase=row.phase, model=row.model,
        status=cast(StepStatus, row.status),
        output=row.output, prompt_hash=row.prompt_hash,
        usage=Usage(prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens,
                    cached_tokens=row.cached_tokens, reasoning_tokens=row.reasoning_tokens),
        cost_usd=row.cost_usd, latency_s=row.latency_s, attempts=row.attempts, calls=row.calls,
        error=row.error,
        rehearsal=row.rehearsal, created_at=row.created_at,
    )


def _values(debate_id: str, record: StepRecord) -> dict[str, Any]:
    return {
        "debate_id": debate_id, "key": record.key, "role": record.role, "phase": record.phase,
        "model": record.model, "status": record.status,
        "output": jsonable(record.output) if record.output is not None else None,
        "prompt_hash": record.prompt_hash, "prompt_tokens": record.usage.prompt_tokens,
        "completion_tokens": record.usage.completion_tokens,
        "cached_tokens": record.usage.cached_tokens,
        "reasoning_tokens": record.usage.reasoning_tokens, "cost_usd": record.cost_usd,
        "latency_s": record.latency_s, "attempts": record.attempts, "calls": record.calls,
        "error": record.error,
        "rehearsal": record.rehearsal, "created_at": record.created_at,
    }


async def get_step(session: AsyncSession, debate_id: str, key: str) -> StepRecord | None:
    row = await session.scalar(
        select(StepRow).where(StepRow.debate_id == debate_id, StepRow.key == key)
        .execution_options(populate_existing=True)
    )
    return to_step(row) if row is not None else None


async def put_step(session: AsyncSession, debate_id: str, record: StepRecord) -> StepRecord:
    """Store `record` unless the key is taken; return what is stored (the first writer's).
    One statement when the key is free: RETURNING says ours went in, so nothing is read back."""
    values = _values(debate_id, record)
    inserted = await session.execute(
        ignoring_insert(session, StepRow, conflict=_KEY, returning=("id",)), values)
    if inserted.first() is not None:
        return record
    stored = await _stored(session, debate_id, record.key)
    if stored.status == _DEGRADED and record.status != _DEGRADED:
        await session.execute(
            update(StepRow)
            .where(StepRow.debate_id == debate_id, StepRow.key == record.key,
                   StepRow.status == _DEGRADED)
            .values(values).execution_options(synchronize_session=False)
        )
        stored = await _stored(session, debate_id, record.key)
    return stored


async def put_steps(session: AsyncSession, items: list[tuple[str, StepRecord]], fresh: bool
                    ) -> tuple[list[StepRecord], AfterCommit | None]:
    """`put_step` for many (debate, record) pairs with one multi-row INSERT; a key that was
    taken (rare: another worker's, or a degraded record's) goes the single-row way. The batch
    function of the journal's group commit (storage/journal.py)."""
    if not items:
        return [], None
    rows = [_values(debate_id, record) for debate_id, record in items]
    inserted = await write(
        session, ignoring_insert(session, StepRow, conflict=_KEY, returning=_KEY), rows)
    went_in = {(row[0], row[1]) for row in inserted}
    stored: list[StepRecord] = []
    for debate_id, record in items:
        if (debate_id, record.key) in went_in:
            went_in.discard((debate_id, record.key))   # a second put of the key in the batch
            stored.append(record)                        # finds the first's, below
        else:
            stored.append(await put_step(session, debate_id, record))
    return stored, None


async def _stored(session: AsyncSession, debate_id: str, key: str) -> StepRecord:
    stored = await get_step(session, debate_id, key)
    if stored is None:  # cannot happen after the insert: ours went in, or the winner's did
        raise NotFound("step", f"{debate_id}/{key}")
    return stored


async def list_steps(session: AsyncSession, debate_id: str) -> list[StepRecord]:
    """A debate's steps in the order they were stored."""
    rows = await session.scalars(
        select(StepRow).where(StepRow.debate_id == debate_id).order_by(StepRow.id)
    )
    return [to_step(row) for row in rows]


_STEPS = cast(Table, StepRow.__table__)
#: the steps of a list of debates (built once: `write`)
_STEPS_OF = PerDialect(lambda dialect: select(_STEPS)
                       .where(among(_STEPS.c.debate_id, "ids", dialect))
                       .order_by(_STEPS.c.debate_id, _STEPS.c.id))


async def list_steps_many(session: AsyncSession, debate_ids: list[str], fresh: bool
                          ) -> tuple[list[list[StepRecord]], None]:
    """`list_steps` of many debates in one Core query (a batch function of `lookups_for`: the
    debates a worker starts at the same moment read their checkpoints together)."""
    rows = await write(session, _STEPS_OF(session), {"ids": list(set(debate_ids))})
    found: dict[str, list[StepRecord]] = {}
    for row in rows:
        found.setdefault(row.debate_id, []).append(to_step(row))
    return [list(found.get(debate_id, ())) for debate_id in debate_ids], None


class DbCheckpointStore:
    """engine.ports.CheckpointStore on the database. A run reads its debate's stored steps once,
    on its first `get` (a resumed debate's are all there; a new one has none), instead of once
    per step; concurrent first `get`s share that read, and the first reads of debates starting
    at the same moment share one query (`lookups_for`). Each `put` is one row of the journal's
    group commit (storage/journal.py): committed with the step's spend and audit links, and other
    debates' writes of the same moment."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._known: dict[str, dict[str, StepRecord]] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self._put_while_loading: dict[str, dict[str, StepRecord]] = {}

    async def get(self, debate_id: str, key: str) -> StepRecord | None:
        known = self._known.get(debate_id)
        if known is None:
            known = await self._load(debate_id)
        return known.get(key)

    async def _load(self, debate_id: str) -> dict[str, StepRecord]:
        async with self._loading.setdefault(debate_id, asyncio.Lock()):
            known = self._known.get(debate_id)
            if known is None:
                stored: list[StepRecord] = await lookups_for(self.db).read(list_steps_many,
                                                                           debate_id)
                known = {step.key: step for step in stored}
                # a put committed after the read began is in neither: keep it
                known.update(self._put_while_loading.pop(debate_id, {}))
                self._known[debate_id] = known
            self._loading.pop(debate_id, None)
            return known

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        stored: StepRecord = await journal_for(self.db).write(*self.write_of(debate_id, record))
        self.remember(debate_id, stored)
        return stored

    def write_of(self, debate_id: str, record: StepRecord) -> tuple[BatchWriter, Any]:
        """`put` as a journal write, for a caller that submits it with others (then it calls
        `remember` with the result)."""
        return put_steps, (debate_id, record)

    def remember(self, debate_id: str, stored: StepRecord) -> None:
        """A checkpoint now committed, kept for this run's `get`s."""
        known = self._known.get(debate_id)
        if known is not None:
            known[stored.key] = stored
        else:
            self._put_while_loading.setdefault(debate_id, {})[stored.key] = stored


async def recent_usage(session: AsyncSession, *, limit: int) -> list[Observed]:
    """What recent answered steps used per billed reply, newest first, at most `limit`: OK
    steps that called the provider (not read from a cache), rehearsals left out. What the
    service learns reply sizes from (engine/money/sizing.py)."""
    rows = await session.execute(
        select(_STEPS.c.debate_id, _STEPS.c.key, _STEPS.c.role, _STEPS.c.phase, _STEPS.c.model,
               _STEPS.c.prompt_tokens, _STEPS.c.completion_tokens, _STEPS.c.reasoning_tokens,
               _STEPS.c.calls)
        .where(_STEPS.c.status == StepStatus.OK.value, _STEPS.c.rehearsal.is_(False),
               _STEPS.c.calls > 0)
        .order_by(_STEPS.c.id.desc()).limit(limit))
    return [Observed(model=row.model, kind=step_kind(row.role, row.phase),
                     prompt_tokens=row.prompt_tokens // row.calls,
                     completion_tokens=row.completion_tokens // row.calls,
                     reasoning_tokens=row.reasoning_tokens // row.calls,
                     debate_id=row.debate_id, key=row.key) for row in rows]
