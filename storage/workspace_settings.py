"""What a workspace's admins set over the operator's defaults (daily budget, reviewers, review
channel, per-preset alpha cut-offs), one row per workspace. None is "not
set": the operator's default applies (bot/service/workspace_settings.py resolves them). Every
change is a link in the audit chain (who, which fields, before and after), in the same
transaction as the change."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage import audit
from storage.db import ignoring_insert, write

if TYPE_CHECKING:
    from storage.workspace_rows import WorkspaceSettingsRow

__all__ = ["AUDIT_KIND", "Overrides", "daily_cap", "get", "update"]

AUDIT_KIND = "workspace_settings_changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Overrides:
    """A workspace's own values; None: not set (the operator's default applies)."""

    team_id: str
    daily_budget_usd: float | None = None
    reviewers: tuple[str, ...] | None = None
    review_channel: str | None = None
    thresholds: dict[str, dict[str, float]] | None = None
    updated_by: str = ""
    updated_at: datetime | None = None

    def values(self) -> dict[str, Any]:
        """The settable fields, as JSON data (what the audit records)."""
        found = asdict(self)
        return {name: (list(v) if isinstance(v, tuple) else v) for name, v in found.items()
                if name in SETTABLE}


SETTABLE = ("daily_budget_usd", "reviewers", "review_channel", "thresholds")


def _table() -> type[WorkspaceSettingsRow]:
    """The workspace settings' table, mapped on first use: a process whose debates belong to no
    workspace (`dialectic run`) never maps the workspace tables (a few ms of its start)."""
    from storage.workspace_rows import WorkspaceSettingsRow

    return WorkspaceSettingsRow


def _of(row: WorkspaceSettingsRow) -> Overrides:
    return Overrides(
        team_id=row.team_id, daily_budget_usd=row.daily_budget_usd,
        reviewers=None if row.reviewers is None else tuple(row.reviewers),
        review_channel=row.review_channel, thresholds=row.thresholds,
        updated_by=row.updated_by, updated_at=row.updated_at)


async def get(session: AsyncSession, team_id: str | None) -> Overrides:
    """The workspace's overrides (all unset for an unknown workspace or none)."""
    if not team_id:
        return Overrides(team_id="")
    row = await session.get(_table(), team_id, populate_existing=True)
    return Overrides(team_id=team_id) if row is None else _of(row)


async def daily_cap(session: AsyncSession, team_id: str | None) -> float | None:
    """The workspace's own daily cap, if its admins set one."""
    if not team_id:
        return None
    table = _table()
    cap = await session.scalar(select(table.daily_budget_usd).where(table.team_id == team_id))
    return None if cap is None else float(cap)


async def update(session: AsyncSession, team_id: str, changes: dict[str, Any], *, by: str,
                 now: datetime) -> tuple[Overrides, Overrides]:
    """Set (a value) or unset (None) the named fields; audited when anything changed.
    Returns (before, after). Unknown field names are a ValueError (a caller's bug)."""
    unknown = set(changes) - set(SETTABLE)
    if unknown:
        raise ValueError(f"not a workspace setting: {', '.join(sorted(unknown))}")
    row = await _locked(session, team_id)
    if row is None and _changes(Overrides(team_id=team_id), changes)[1]:
        # created empty (a concurrent first save's row is kept), then locked and read
        await write(session, ignoring_insert(session, _table(), conflict=("team_id",)),
                    {"team_id": team_id, "updated_by": by, "updated_at": now})
        row = await _locked(session, team_id)
    before = Overrides(team_id=team_id) if row is None else _of(row)
    after, changed = _changes(before, changes)
    if row is None or not changed:
        return before, before
    values = after.values()
    for name in SETTABLE:
        setattr(row, name, values[name])
    row.updated_by, row.updated_at = by, now
    await audit.append(session, debate_id=None, kind=AUDIT_KIND, actor=by, at=now, data={
        "team_id": team_id, "changed": sorted(changed),
        "before": {k: before.values()[k] for k in sorted(changed)},
        "after": {k: values[k] for k in sorted(changed)}})
    await session.flush()
    return before, replace(after, updated_by=by, updated_at=now)


def _changes(before: Overrides, changes: dict[str, Any]) -> tuple[Overrides, set[str]]:
    """The overrides after `changes`, and the names of the fields that differ."""
    after = replace(before, **{k: _stored(k, v) for k, v in changes.items()})
    return after, {f.name for f in fields(Overrides) if f.name in SETTABLE
                   and getattr(before, f.name) != getattr(after, f.name)}


async def _locked(session: AsyncSession, team_id: str) -> WorkspaceSettingsRow | None:
    row: WorkspaceSettingsRow | None = await session.get(
        _table(), team_id, with_for_update=True, populate_existing=True)
    return row


def _stored(name: str, value: Any) -> Any:
    """The value as Overrides holds it (sequences as tuples)."""
    if value is not None and name == "reviewers":
        return tuple(value)
    return value
