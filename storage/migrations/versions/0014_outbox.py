"""The outbox: what a finished debate owes the outside world (its thread's result, a review
request, its unfurled cards refreshed), written with the result and delivered with retries
(storage/outbox.py); and where debates' links were unfurled.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("ref", sa.String(64), nullable=False),
        sa.Column("target", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("due_at", WHEN, nullable=False),
        sa.Column("claimed_by", sa.String(255), nullable=True),
        sa.Column("claimed_until", WHEN, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("state", JSON, nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.Column("delivered_at", WHEN, nullable=True),
        sa.ForeignKeyConstraint(["debate_id"], ["debates.id"], ondelete="CASCADE",
                                name="fk_deliveries_debate_id_debates"),
        sa.PrimaryKeyConstraint("id", name="pk_deliveries"),
        sa.UniqueConstraint("debate_id", "kind", "ref", name="uq_deliveries_debate_id_kind_ref"),
    )
    op.create_index("ix_deliveries_debate_id", "deliveries", ["debate_id"])
    op.create_index("ix_deliveries_status_due_at", "deliveries", ["status", "due_at"])
    op.create_table(
        "slack_unfurls",
        sa.Column("debate_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["debate_id"], ["debates.id"], ondelete="CASCADE",
                                name="fk_slack_unfurls_debate_id_debates"),
        sa.PrimaryKeyConstraint("debate_id", "channel_id", "message_ts",
                                name="pk_slack_unfurls"),
    )


def downgrade() -> None:
    op.drop_table("slack_unfurls")
    op.drop_index("ix_deliveries_status_due_at", table_name="deliveries")
    op.drop_index("ix_deliveries_debate_id", table_name="deliveries")
    op.drop_table("deliveries")
