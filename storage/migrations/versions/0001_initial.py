"""The initial schema: debates, steps, audit chain, reviews, budget, evidence, caches, schedules.

Revision ID: 0001
Revises:
Create Date: 2024-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models.py does.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _id() -> sa.Column[int]:
    return sa.Column("id", BIG_ID, primary_key=True, autoincrement=True)


def _debates() -> None:
    op.create_table(
        "debates",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("preset", sa.String(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("request", JSON, nullable=False),
        sa.Column("origin", JSON, nullable=False),
        sa.Column("requested_by", sa.String(255), nullable=False),
        sa.Column("estimate_usd", sa.Float(), nullable=False),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("result", JSON, nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.String(64), nullable=True),
        sa.Column("cached_from", sa.String(64), nullable=True),
        sa.Column("downgraded_from", sa.String(32), nullable=True),
        sa.Column("topic_key", sa.String(64), nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        _ts("lease_expires_at", nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("started_at", nullable=True),
        _ts("finished_at", nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_debates"),
        sa.UniqueConstraint("idempotency_key", name="uq_debates_idempotency_key"),
    )
    op.create_index("ix_debates_status_created_at", "debates", ["status", "created_at"])
    op.create_index("ix_debates_topic_key_created_at", "debates", ["topic_key", "created_at"])
    op.create_index("ix_debates_parent_id", "debates", ["parent_id"])
    op.create_index("ix_debates_finished_at", "debates", ["finished_at"])


def _steps() -> None:
    op.create_table(
        "steps",
        _id(),
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("phase", sa.String(64), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("output", JSON, nullable=True),
        sa.Column("prompt_hash", sa.String(64), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("rehearsal", sa.Boolean(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_steps"),
        sa.ForeignKeyConstraint(
            ["debate_id"], ["debates.id"], name="fk_steps_debate_id_debates", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("debate_id", "key", name="uq_steps_debate_id_key"),
    )


def _audit_events() -> None:
    op.create_table(
        "audit_events",
        _id(),
        sa.Column("chain", sa.String(64), nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("data", JSON, nullable=False),
        _ts("at"),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_events"),
        sa.UniqueConstraint("chain", "seq", name="uq_audit_events_chain_seq"),
    )
    op.create_index("ix_audit_events_debate_id", "audit_events", ["debate_id"])


def _reviews() -> None:
    op.create_table(
        "reviews",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=True),
        sa.Column("message_ts", sa.String(64), nullable=True),
        sa.Column("decided_by", sa.String(255), nullable=True),
        _ts("decided_at", nullable=True),
        sa.Column("decision_note", sa.Text(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_reviews"),
        sa.ForeignKeyConstraint(
            ["debate_id"], ["debates.id"], name="fk_reviews_debate_id_debates", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_reviews_debate_id", "reviews", ["debate_id"])
    op.create_index("ix_reviews_status", "reviews", ["status"])


def _budget() -> None:
    op.create_table(
        "budget_days",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("cap_usd", sa.Float(), nullable=False),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("spent_usd", sa.Float(), nullable=False),
        sa.Column("alerted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("day", name="pk_budget_days"),
    )
    op.create_table(
        "budget_ledger",
        _id(),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("amount_usd", sa.Float(), nullable=False),
        _ts("at"),
        sa.PrimaryKeyConstraint("id", name="pk_budget_ledger"),
        sa.ForeignKeyConstraint(
            ["day"], ["budget_days.day"], name="fk_budget_ledger_day_budget_days"
        ),
    )
    op.create_index("ix_budget_ledger_day_debate_id", "budget_ledger", ["day", "debate_id"])


def _evidence_and_caches() -> None:
    op.create_table(
        "evidence",
        _id(),
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("author", sa.String(255), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source_id", sa.String(255), nullable=True),
        _ts("at"),
        sa.PrimaryKeyConstraint("id", name="pk_evidence"),
        sa.ForeignKeyConstraint(
            ["debate_id"], ["debates.id"], name="fk_evidence_debate_id_debates", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("source_id", name="uq_evidence_source_id"),
    )
    op.create_index("ix_evidence_debate_id", "evidence", ["debate_id"])
    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("value", JSON, nullable=False),
        _ts("expires_at"),
        sa.PrimaryKeyConstraint("key", name="pk_judge_cache"),
    )
    op.create_index("ix_judge_cache_expires_at", "judge_cache", ["expires_at"])
    op.create_table(
        "slack_dedupe",
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("source", "key", name="pk_slack_dedupe"),
    )
    op.create_index("ix_slack_dedupe_created_at", "slack_dedupe", ["created_at"])


def _schedules() -> None:
    op.create_table(
        "scheduled_runs",
        _id(),
        sa.Column("schedule_id", sa.String(128), nullable=False),
        sa.Column("slot", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("debate_ids", JSON, nullable=False),
        _ts("created_at"),
        _ts("finished_at", nullable=True),
        sa.Column("detail", JSON, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_scheduled_runs"),
        sa.UniqueConstraint("schedule_id", "slot", name="uq_scheduled_runs_schedule_id_slot"),
    )
    op.create_table(
        "schedules_state",
        sa.Column("schedule_id", sa.String(128), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("updated_by", sa.String(255), nullable=False),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("schedule_id", name="pk_schedules_state"),
    )


def upgrade() -> None:
    _debates()
    _steps()
    _audit_events()
    _reviews()
    _budget()
    _evidence_and_caches()
    _schedules()


def downgrade() -> None:
    for table in (
        "schedules_state", "scheduled_runs", "slack_dedupe", "judge_cache", "evidence",
        "budget_ledger", "budget_days", "reviews", "audit_events", "steps", "debates",
    ):
        op.drop_table(table)
