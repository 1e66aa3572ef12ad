"""Evaluations (`dialectic eval`): runs, each item's outcome per mode, and the baseline calls'
checkpoints, so a run resumes without paying twice and `eval show` reprints its report.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models do.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _ts(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "evaluation_runs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(255), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("spec", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("rehearsal", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("report", JSON, nullable=True),
        sa.Column("requested_by", sa.String(255), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("id", name="pk_evaluation_runs"),
    )
    op.create_index("ix_evaluation_runs_fingerprint_status", "evaluation_runs",
                    ["fingerprint", "status"])
    op.create_index("ix_evaluation_runs_status", "evaluation_runs", ["status"])
    op.create_index("ix_evaluation_runs_created_at", "evaluation_runs", ["created_at"])
    op.create_table(
        "evaluation_outcomes",
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("item_id", sa.String(255), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("tie", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("debate_id", sa.String(64), nullable=True),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["run_id"], ["evaluation_runs.id"], ondelete="CASCADE",
                                name="fk_evaluation_outcomes_run_id_evaluation_runs"),
        sa.PrimaryKeyConstraint("run_id", "mode", "item_id", name="pk_evaluation_outcomes"),
    )
    op.create_table(
        "evaluation_steps",
        sa.Column("carrier_id", sa.String(160), nullable=False),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("record", JSON, nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("carrier_id", "key", name="pk_evaluation_steps"),
    )


def downgrade() -> None:
    op.drop_table("evaluation_steps")
    op.drop_table("evaluation_outcomes")
    op.drop_index("ix_evaluation_runs_created_at", table_name="evaluation_runs")
    op.drop_index("ix_evaluation_runs_status", table_name="evaluation_runs")
    op.drop_index("ix_evaluation_runs_fingerprint_status", table_name="evaluation_runs")
    op.drop_table("evaluation_runs")
