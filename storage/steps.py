"""Checkpointed steps: each LLM call's outcome, stored once per (debate, key).

UNIQUE(debate_id, key) makes "no step is executed twice" a constraint rather than a hope: the
second writer of a key gets the first writer's record back, on any worker. The one exception is
a degraded record (the engine retries those), which a real outcome replaces.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import StepRecord, Usage
from engine.vocabulary import StepStatus
from storage.db import Database, insert_ignoring
from storage.errors import NotFound
from storage.models import StepRow, jsonable

_DEGRADED = "degraded"


def to_step(row: StepRow) -> StepRecord:
    return StepRecord(
        key=row.key, role=row.role, phase=row.phase, model=row.model,
        status=cast(StepStatus, row.status),
        output=row.output, prompt_hash=row.prompt_hash,
        usage=Usage(prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens),
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
        "completion_tokens": record.usage.completion_tokens, "cost_usd": record.cost_usd,
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
    """Store `record` unless the key is taken; return what is stored (the first writer's)."""
    values = _values(debate_id, record)
    await session.execute(insert_ignoring(session, StepRow, values, conflict=("debate_id", "key")))
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


class DbCheckpointStore:
    """engine.ports.CheckpointStore on the database; each call is its own short transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, debate_id: str, key: str) -> StepRecord | None:
        async with self.db.transaction(readonly=True) as session:
            return await get_step(session, debate_id, key)

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        async with self.db.transaction() as session:
            return await put_step(session, debate_id, record)
