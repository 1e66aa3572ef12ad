"""The scheduler's tables (storage/schedules.py and storage/briefs.py are their repositories): the
slots each schedule fired, which schedules are paused, and the decision briefs waiting for their
meeting. Beside storage/models.py (same Base and column types): only a process that schedules or
shows them maps them, never `dialectic run`; storage/schema.py lists every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime, big_id, json_type


class ScheduledRunRow(Base):
    __tablename__ = "scheduled_runs"
    __table_args__ = (UniqueConstraint("schedule_id", "slot"),)  # each slot fires once

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    schedule_id: Mapped[str] = mapped_column(String(128))
    slot: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    debate_ids: Mapped[list[str]] = mapped_column(json_type())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    detail: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)


class ScheduleStateRow(Base):
    __tablename__ = "schedules_state"

    schedule_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    paused: Mapped[bool] = mapped_column(Boolean)
    updated_by: Mapped[str] = mapped_column(String(255))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class BriefRow(Base):
    __tablename__ = "briefs"
    __table_args__ = (Index("ix_briefs_status_start_at", "status", "start_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    topic: Mapped[str] = mapped_column(Text)
    channel: Mapped[str] = mapped_column(String(128))
    requested_by: Mapped[str] = mapped_column(String(255))
    meeting_at: Mapped[datetime] = mapped_column(UTCDateTime())
    start_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[str] = mapped_column(String(16))
    debate_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    message_ts: Mapped[str | None] = mapped_column(String(64), nullable=True)
    detail: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
