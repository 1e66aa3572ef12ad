"""The per-workspace settings table (storage/workspace_settings.py is its repository): what a
workspace's admins set over the operator's defaults. A column left NULL is not set, and the
operator's default (environment / dialectic.toml) applies. Beside storage/models.py (same Base
and column types), imported by its repository, the database module and the migration
environment."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, String
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
