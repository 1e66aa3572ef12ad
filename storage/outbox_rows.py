"""The outbox's tables (storage/outbox.py is their repository): what finished debates owe the
outside world, and where their links were unfurled (cards to refresh). Beside storage/models.py
(same Base and column types), imported by its repository; storage/schema.py lists every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime, big_id, json_type


class DeliveryRow(Base):
    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("debate_id", "kind", "ref"),
        Index("ix_deliveries_status_due_at", "status", "due_at"),
    )

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    ref: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str] = mapped_column(Text)
    state: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class UnfurlRow(Base):
    """Where a debate's link was unfurled as a Work Object (a posted message), so the card can be
    refreshed when the debate finishes (its delivery, kind `work_objects`)."""

    __tablename__ = "slack_unfurls"

    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), primary_key=True)
    channel_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    message_ts: Mapped[str] = mapped_column(String(32), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SlackStartRow(Base):
    """A debate asked for in Slack and acknowledged there, until it is submitted (or refused):
    what a process that died between the ack and the submission leaves for another to finish
    (storage/starts.py)."""

    __tablename__ = "slack_starts"
    __table_args__ = (Index("ix_slack_starts_status_claimed_until", "status", "claimed_until"),)

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    place: Mapped[dict[str, Any]] = mapped_column(json_type())
    request: Mapped[dict[str, Any]] = mapped_column(json_type())
    status: Mapped[str] = mapped_column(String(16))
    message_ts: Mapped[str | None] = mapped_column(String(32))
    debate_id: Mapped[str | None] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer)
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
