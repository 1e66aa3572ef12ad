"""Briefs: one-off pre-meeting debates, planned ahead and posted before the meeting.

Revision ID: 0003
Revises: 0002
Create Date: 2024-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models do.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _ts(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "briefs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("channel", sa.String(128), nullable=False),
        sa.Column("requested_by", sa.String(255), nullable=False),
        _ts("meeting_at"),
        _ts("start_at"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=True),
        sa.Column("message_ts", sa.String(64), nullable=True),
        sa.Column("detail", JSON, nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("id", name="pk_briefs"),
    )
    op.create_index("ix_briefs_status_start_at", "briefs", ["status", "start_at"])


def downgrade() -> None:
    op.drop_table("briefs")
