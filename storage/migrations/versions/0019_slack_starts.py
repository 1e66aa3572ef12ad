"""Slack starts not yet through: a debate asked for in Slack and acknowledged there is written
down right after the ack, so one whose process dies before submitting it is finished by another
(storage/starts.py).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table(
        "slack_starts",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("place", JSON, nullable=False),
        sa.Column("request", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=True),
        sa.Column("debate_id", sa.String(64), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("claimed_by", sa.String(255), nullable=True),
        sa.Column("claimed_until", WHEN, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_slack_starts"),
    )
    op.create_index("ix_slack_starts_status_claimed_until", "slack_starts",
                    ["status", "claimed_until"])


def downgrade() -> None:
    op.drop_index("ix_slack_starts_status_claimed_until", table_name="slack_starts")
    op.drop_table("slack_starts")
