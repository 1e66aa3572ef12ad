"""Readers' feedback on results: one row per reader and debate (👍 / 👎 and a "Why?"), apart
from the reviewers' decisions in `reviews`; the preset, routing and rehearsal flag the reader saw
are kept with it, so the feedback counts read one table.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("team_id", sa.String(64), nullable=True),
        sa.Column("rating", sa.String(8), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("preset", sa.String(64), nullable=False),
        sa.Column("routing", sa.String(16), nullable=False),
        sa.Column("rehearsal", sa.Boolean(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["debate_id"], ["debates.id"], ondelete="CASCADE",
                                name="fk_feedback_debate_id_debates"),
        sa.PrimaryKeyConstraint("debate_id", "user_id", name="pk_feedback"),
    )
    op.create_index("ix_feedback_preset_updated_at", "feedback", ["preset", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_feedback_preset_updated_at", table_name="feedback")
    op.drop_table("feedback")
