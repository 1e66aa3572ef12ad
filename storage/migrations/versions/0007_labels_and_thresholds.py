"""Reviewers' decisions become labels; judged debates are kept for the audits; applied thresholds.

`panels` holds one row per judged debate as routed (each judge's order, winner, model and raw
scores, each side's length, alpha, band, routing, the cut-offs routed by, the spot-check draw);
with the reviews it is what the judge audit, the routing audit and the threshold suggester read.
`reviews` says whether a review is a spot check, what its decision is about (the verdict, or the
run itself) and the side a reviewer named. `applied_thresholds` keeps every change of a preset's
alpha cut-offs an operator applied; the newest is in force.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models do.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "panels",
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("preset", sa.String(64), nullable=False),
        sa.Column("finished_at", WHEN, nullable=False),
        sa.Column("alpha", sa.Float(), nullable=True),
        sa.Column("band", sa.String(16), nullable=False),
        sa.Column("routing", sa.String(16), nullable=False),
        sa.Column("irreconcilable", sa.Boolean(), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("winner", sa.String(8), nullable=True),
        sa.Column("lengths", JSON, nullable=False),
        sa.Column("verdicts", JSON, nullable=False),
        sa.Column("weights", JSON, nullable=False),
        sa.Column("thresholds", JSON, nullable=True),
        sa.Column("spot_check", sa.Boolean(), nullable=False),
        sa.Column("spot_check_fraction", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["debate_id"], ["debates.id"], ondelete="CASCADE",
                                name="fk_panels_debate_id_debates"),
        sa.PrimaryKeyConstraint("debate_id", name="pk_panels"),
    )
    op.create_index("ix_panels_finished_at", "panels", ["finished_at"])
    op.create_index("ix_panels_preset_finished_at", "panels", ["preset", "finished_at"])
    op.create_table(
        "applied_thresholds",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("preset", sa.String(64), nullable=False),
        sa.Column("thresholds", JSON, nullable=True),
        sa.Column("applied_by", sa.String(255), nullable=False),
        sa.Column("applied_at", WHEN, nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("evidence", JSON, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_applied_thresholds"),
    )
    op.create_index("ix_applied_thresholds_preset_applied_at", "applied_thresholds",
                    ["preset", "applied_at"])
    op.add_column("reviews", sa.Column("spot_check", sa.Boolean(), nullable=False,
                                       server_default=sa.false()))
    op.add_column("reviews", sa.Column("about", sa.String(16), nullable=True))
    op.add_column("reviews", sa.Column("named_winner", sa.String(8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("reviews") as batch:
        batch.drop_column("named_winner")
        batch.drop_column("about")
        batch.drop_column("spot_check")
    op.drop_index("ix_applied_thresholds_preset_applied_at", table_name="applied_thresholds")
    op.drop_table("applied_thresholds")
    op.drop_index("ix_panels_preset_finished_at", table_name="panels")
    op.drop_index("ix_panels_finished_at", table_name="panels")
    op.drop_table("panels")
