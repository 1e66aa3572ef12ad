"""Alpha cut-offs an operator applied to a preset. Every change is a row (who, when, why, the
evidence shown); the newest row of a preset is in force, and one without cut-offs puts the
preset's own back. Routing reads these over the preset's; nothing here applies anything by
itself."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import validation_message
from engine.settings import ThresholdSpec
from storage.models import AppliedThresholdsRow, jsonable
from storage.records import AppliedThresholds

__all__ = ["apply", "changes", "in_force", "in_force_batch"]

log = logging.getLogger(__name__)


def _cutoffs(row: AppliedThresholdsRow) -> tuple[ThresholdSpec | None, str]:
    """The row's cut-offs, validated as on apply; stored ones that are not (an older version's,
    a manual edit: infinite, out of 0-1, out of order) are none, with why."""
    if not row.thresholds:
        return None, ""
    try:
        return ThresholdSpec.model_validate(row.thresholds), ""
    except ValidationError as exc:
        why = validation_message(exc)
    log.warning("the cut-offs applied to preset %s by %s are not valid (%s); it routes by "
                "its own until `dialectic thresholds apply --preset %s` sets valid ones",
                row.preset, row.applied_by, why, row.preset)
    return None, why


def _record(row: AppliedThresholdsRow) -> AppliedThresholds:
    cutoffs, invalid = _cutoffs(row)
    return AppliedThresholds(
        preset=row.preset, thresholds=cutoffs, invalid=invalid,
        applied_by=row.applied_by, applied_at=row.applied_at, note=row.note,
        evidence=row.evidence or {})


async def apply(session: AsyncSession, *, preset: str, thresholds: ThresholdSpec | None,
                by: str, at: datetime, note: str = "",
                evidence: dict[str, Any] | None = None) -> AppliedThresholds:
    """Record a change of the preset's cut-offs (None: back to the preset's own). Auditing it
    is the caller's."""
    row = AppliedThresholdsRow(
        preset=preset, applied_by=by, applied_at=at, note=note,
        thresholds=thresholds.model_dump(mode="json") if thresholds is not None else None,
        evidence=jsonable(evidence) if evidence else None)
    session.add(row)
    await session.flush()
    return _record(row)


async def changes(session: AsyncSession, *, preset: str | None = None, limit: int = 50
                  ) -> list[AppliedThresholds]:
    """The newest changes first (of one preset, or all)."""
    query = select(AppliedThresholdsRow)
    if preset is not None:
        query = query.where(AppliedThresholdsRow.preset == preset)
    rows = await session.scalars(query.order_by(AppliedThresholdsRow.applied_at.desc(),
                                                AppliedThresholdsRow.id.desc()).limit(limit))
    return [_record(row) for row in rows]


async def in_force(session: AsyncSession) -> dict[str, AppliedThresholds]:
    """Per preset, the applied cut-offs in force; presets back on their own are absent. A preset
    whose newest stored cut-offs are not valid (logged) is there with `thresholds` None and why
    in `invalid`: it routes by its own, and the views say the applied ones were set aside."""
    rows = await session.scalars(select(AppliedThresholdsRow).order_by(
        AppliedThresholdsRow.applied_at, AppliedThresholdsRow.id))
    newest = {row.preset: _record(row) for row in rows}
    return {preset: found for preset, found in sorted(newest.items())
            if found.thresholds is not None or found.invalid}


async def in_force_batch(session: AsyncSession, asks: list[None], fresh: bool
                         ) -> tuple[list[dict[str, AppliedThresholds]], None]:
    """`in_force` as a batch function of `lookups_for` (storage/journal.py): the debates a worker
    starts at the same moment share one read of the cut-offs in force."""
    found = await in_force(session)
    return [found] * len(asks), None
