"""The tables of `dialectic eval` (storage/evaluations.py is their repository): runs, outcomes
per mode and item, baseline checkpoints. Beside storage/models.py (same Base and column types),
imported by their repository; storage/schema.py lists every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime, json_type


# `dialectic eval` (storage/evaluations.py): runs, outcomes per mode, baseline checkpoints
class EvaluationRunRow(Base):
    __tablename__ = "evaluation_runs"
    __table_args__ = (Index("ix_evaluation_runs_fingerprint_status", "fingerprint", "status"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    dataset: Mapped[str] = mapped_column(String(255))
    source: Mapped[str] = mapped_column(Text)
    spec: Mapped[dict[str, Any]] = mapped_column(json_type())   # modes, items, estimate_usd, ...
    status: Mapped[str] = mapped_column(String(16), index=True)
    rehearsal: Mapped[bool] = mapped_column(Boolean)
    cost_usd: Mapped[float] = mapped_column(Float)
    report: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    requested_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())   # when finished, if it has


class EvaluationOutcomeRow(Base):
    __tablename__ = "evaluation_outcomes"

    run_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("evaluation_runs.id", ondelete="CASCADE"), primary_key=True)
    mode: Mapped[str] = mapped_column(String(32), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    correct: Mapped[bool] = mapped_column(Boolean)
    tie: Mapped[bool] = mapped_column(Boolean)
    cost_usd: Mapped[float] = mapped_column(Float)
    calls: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    debate_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class EvaluationStepRow(Base):
    __tablename__ = "evaluation_steps"

    carrier_id: Mapped[str] = mapped_column(String(160), primary_key=True)
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    record: Mapped[dict[str, Any]] = mapped_column(json_type())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
