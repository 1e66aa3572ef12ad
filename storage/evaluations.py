"""Evaluation runs, their item outcomes and their baseline calls' checkpoints.

A run is stored before its first call; each item's outcome in each mode is stored as it
finishes (once: a second writer's is ignored), so a crashed run resumes with what is missing
and `eval show` reads the finished report back. Functions take a session and never commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import StepRecord
from engine.evaluation.report import ItemOutcome
from storage.budget import SETTLE
from storage.db import Database, ignoring_insert
from storage.errors import NotFound
from storage.evaluation_rows import EvaluationOutcomeRow, EvaluationRunRow, EvaluationStepRow
from storage.models import BudgetLedgerRow, DebateRow, jsonable

RUNNING, FINISHED, STOPPED = "running", "finished", "stopped"


def carrier_id(run_id: str, mode: str, index: int) -> str:
    """What a baseline item's calls are checkpointed and its money held under (<= 64 chars)."""
    return f"ev-{run_id}-{mode}-{index}"


def idempotency_key(run_id: str, mode: str, index: int) -> str:
    """The submission key of a debate-mode item: its debate is found again on resume."""
    return f"eval:{run_id}:{mode}:{index}"


@dataclass(frozen=True, slots=True)
class EvaluationRun:
    id: str
    fingerprint: str
    dataset: str
    source: str
    spec: dict[str, Any]
    status: str
    rehearsal: bool
    estimate_low_usd: float
    estimate_high_usd: float
    created_at: datetime
    updated_at: datetime
    cost_usd: float = 0.0
    report: dict[str, Any] | None = None
    requested_by: str = "cli"
    finished_at: datetime | None = None
    done: dict[str, int] = field(default_factory=dict)   # outcomes stored per mode
    # `cost_usd` is what the budget's ledger booked for the run (`spent`): every item, failed
    # debates and items a stop cut short included; `answered_usd` the part its outcomes cost
    answered_usd: float = 0.0


def _to_run(row: EvaluationRunRow, done: dict[str, int] | None = None,
            spent_usd: float | None = None) -> EvaluationRun:
    low, high = row.spec.get("estimate_usd") or (0.0, 0.0)
    return EvaluationRun(
        id=row.id, fingerprint=row.fingerprint, dataset=row.dataset, source=row.source,
        spec=dict(row.spec), status=row.status, rehearsal=row.rehearsal,
        estimate_low_usd=low, estimate_high_usd=high, answered_usd=row.cost_usd,
        created_at=row.created_at, updated_at=row.updated_at,
        cost_usd=row.cost_usd if spent_usd is None else spent_usd,
        report=dict(row.report) if row.report is not None else None,
        requested_by=row.requested_by,
        finished_at=row.updated_at if row.status == FINISHED else None, done=done or {})


async def create(session: AsyncSession, *, run: EvaluationRun) -> EvaluationRun:
    row = EvaluationRunRow(
        id=run.id, fingerprint=run.fingerprint, dataset=run.dataset[:255], source=run.source,
        spec=jsonable({**run.spec, "estimate_usd": [run.estimate_low_usd,
                                                     run.estimate_high_usd]}),
        status=RUNNING, rehearsal=run.rehearsal, cost_usd=0.0, report=None,
        requested_by=run.requested_by[:255], created_at=run.created_at,
        updated_at=run.updated_at)
    session.add(row)
    await session.flush()
    return _to_run(row)


async def _done(session: AsyncSession, run_ids: list[str]) -> dict[str, dict[str, int]]:
    rows = await session.execute(
        select(EvaluationOutcomeRow.run_id, EvaluationOutcomeRow.mode, func.count())
        .where(EvaluationOutcomeRow.run_id.in_(run_ids))
        .group_by(EvaluationOutcomeRow.run_id, EvaluationOutcomeRow.mode))
    found: dict[str, dict[str, int]] = {}
    for run_id, mode, count in rows:
        found.setdefault(run_id, {})[mode] = count
    return found


async def spent(session: AsyncSession, run_id: str) -> float:
    """What the budget's ledger booked for the run, on every day: its baselines' calls (held
    under `carrier_id`) and its debates (submitted under `idempotency_key`), whatever became of
    them. The run's own books: what `eval` reports as spent."""
    debates = select(DebateRow.id).where(DebateRow.idempotency_key.like(f"eval:{run_id}:%"))
    total = await session.scalar(
        select(func.sum(BudgetLedgerRow.amount_usd))
        .where(BudgetLedgerRow.kind == SETTLE,
               or_(BudgetLedgerRow.debate_id.like(f"ev-{run_id}-%"),
                   BudgetLedgerRow.debate_id.in_(debates))))
    return round(float(total or 0.0), 9)


async def submitted(session: AsyncSession, key: str) -> bool:
    """Whether a debate-mode item's debate exists (submitted under `idempotency_key`)."""
    found = await session.scalar(select(DebateRow.id).where(DebateRow.idempotency_key == key))
    return found is not None


async def get(session: AsyncSession, run_id: str) -> EvaluationRun:
    row = await session.get(EvaluationRunRow, run_id, populate_existing=True)
    if row is None:
        raise NotFound("evaluation", run_id)
    return _to_run(row, (await _done(session, [run_id])).get(run_id),
                   await spent(session, run_id))


async def unfinished(session: AsyncSession, fingerprint: str) -> EvaluationRun | None:
    """The newest run of the same evaluation that has not finished (it crashed or was
    stopped): rerunning resumes it."""
    row = await session.scalar(
        select(EvaluationRunRow)
        .where(EvaluationRunRow.fingerprint == fingerprint,
               EvaluationRunRow.status != FINISHED)
        .order_by(EvaluationRunRow.created_at.desc()).limit(1))
    return None if row is None else await get(session, row.id)


async def recent(session: AsyncSession, *, limit: int) -> list[EvaluationRun]:
    rows = list(await session.scalars(
        select(EvaluationRunRow)
        .order_by(EvaluationRunRow.created_at.desc(), EvaluationRunRow.id).limit(limit)))
    done = await _done(session, [r.id for r in rows]) if rows else {}
    return [_to_run(r, done.get(r.id), await spent(session, r.id)) for r in rows]


async def put_outcome(session: AsyncSession, *, run_id: str, mode: str, outcome: ItemOutcome,
                      debate_id: str | None, now: datetime) -> bool:
    """Store an item's outcome; False when one was stored already (it is kept)."""
    values = {"run_id": run_id, "mode": mode, "item_id": outcome.item_id,
              "answer": outcome.answer, "correct": outcome.correct, "tie": outcome.tie,
              "cost_usd": outcome.cost_usd, "calls": outcome.calls, "tokens": outcome.tokens,
              "seconds": outcome.seconds, "error": outcome.error, "debate_id": debate_id,
              "created_at": now}
    inserted = await session.execute(
        ignoring_insert(session, EvaluationOutcomeRow, conflict=("run_id", "mode", "item_id"),
                        returning=("item_id",)), values)
    if inserted.first() is None:
        return False
    await session.execute(
        update(EvaluationRunRow).where(EvaluationRunRow.id == run_id)
        .values(cost_usd=EvaluationRunRow.cost_usd + outcome.cost_usd, updated_at=now))
    return True


async def outcomes(session: AsyncSession, run_id: str) -> dict[str, list[ItemOutcome]]:
    """Every stored outcome of the run, by mode."""
    rows = await session.scalars(
        select(EvaluationOutcomeRow).where(EvaluationOutcomeRow.run_id == run_id)
        .order_by(EvaluationOutcomeRow.mode, EvaluationOutcomeRow.created_at))
    found: dict[str, list[ItemOutcome]] = {}
    for r in rows:
        found.setdefault(r.mode, []).append(ItemOutcome(
            item_id=r.item_id, answer=r.answer, correct=r.correct, tie=r.tie,
            cost_usd=r.cost_usd, calls=r.calls, tokens=r.tokens, seconds=r.seconds,
            error=r.error))
    return found


async def debate_ids(session: AsyncSession, run_id: str, modes: Sequence[str]
                     ) -> dict[str, list[str]]:
    """The debates the run's items in these modes ran as, by mode."""
    rows = await session.execute(
        select(EvaluationOutcomeRow.mode, EvaluationOutcomeRow.debate_id)
        .where(EvaluationOutcomeRow.run_id == run_id, EvaluationOutcomeRow.mode.in_(modes))
        .order_by(EvaluationOutcomeRow.mode, EvaluationOutcomeRow.created_at))
    found: dict[str, list[str]] = {}
    for mode, debate_id in rows:
        if debate_id:
            found.setdefault(mode, []).append(debate_id)
    return found


async def finish(session: AsyncSession, run_id: str, *, status: str,
                 report: dict[str, Any], now: datetime) -> EvaluationRun:
    await session.execute(
        update(EvaluationRunRow).where(EvaluationRunRow.id == run_id)
        .values(status=status, report=jsonable(report), updated_at=now))
    return await get(session, run_id)


class EvalCheckpointStore:
    """engine.ports.CheckpointStore over `evaluation_steps`: a baseline's calls, keyed by the
    item they answer (`carrier_id`) and the step key; the first stored record wins."""

    def __init__(self, db: Database, *, clock: Any) -> None:
        self.db = db
        self.clock = clock

    async def get(self, debate_id: str, key: str) -> StepRecord | None:
        async with self.db.transaction(readonly=True) as session:
            row = await session.get(EvaluationStepRow, (debate_id, key))
            return None if row is None else StepRecord.model_validate(row.record)

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        async with self.db.transaction() as session:
            inserted = await session.execute(
                ignoring_insert(session, EvaluationStepRow, conflict=("carrier_id", "key"),
                                returning=("key",)),
                {"carrier_id": debate_id, "key": record.key,
                 "record": jsonable(record.model_dump(mode="json")),
                 "created_at": self.clock()})
            if inserted.first() is not None:
                return record
            row = await session.get(EvaluationStepRow, (debate_id, record.key))
            if row is None:
                raise NotFound("evaluation step", f"{debate_id}/{record.key}")
            return StepRecord.model_validate(row.record)
