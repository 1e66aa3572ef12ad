"""The per-workspace tables: settings (storage/workspace_settings.py is its repository), what a
workspace's admins set over the operator's defaults; schedules (storage/workspace_schedules.py),
the digests its admins defined; and the purges of workspaces' data (storage/purges.py). A
settings column left NULL is not set, and the operator's default (environment / dialectic.toml)
applies. Beside storage/models.py (same Base and column types), imported by its repositories;
storage/schema.py lists every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime, json_type


class WorkspaceSettingsRow(Base):
    __tablename__ = "workspace_settings"

    team_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    daily_budget_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    reviewers: Mapped[list[str] | None] = mapped_column(json_type(), nullable=True)
    review_channel: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # {preset: {"high": .., "tentative": .., "escalate": ..}}
    thresholds: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WorkspaceScheduleRow(Base):
    """A workspace's own schedule: a digest of its topics on a cron slot, in its channel."""

    __tablename__ = "workspace_schedules"
    __table_args__ = (UniqueConstraint("team_id", "name"),)   # names are unique per workspace

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    team_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(64))
    preset: Mapped[str] = mapped_column(String(64))
    topics: Mapped[list[str]] = mapped_column(json_type())
    cron: Mapped[str] = mapped_column(String(128))
    timezone: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool] = mapped_column(Boolean)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WorkspacePurgeRow(Base):
    """A workspace whose data is being erased (`running`) or was (`done`): written before the
    first batch, so a process that dies half-way leaves it for the next one to finish."""

    __tablename__ = "workspace_purges"

    team_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    requested_by: Mapped[str] = mapped_column(String(255))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # rows erased so far, by table (summed over the batches)
    counts: Mapped[dict[str, Any]] = mapped_column(json_type())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
