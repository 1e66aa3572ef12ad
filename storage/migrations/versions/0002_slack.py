"""Slack state: messages the bot has seen (thread context) and the debate of each Slack thread.

Revision ID: 0002
Revises: 0001
Create Date: 2024-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "slack_messages",
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("ts", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("channel_id", "ts", name="pk_slack_messages"),
    )
    op.create_index("ix_slack_messages_channel_id_thread_ts", "slack_messages",
                    ["channel_id", "thread_ts"])
    op.create_index("ix_slack_messages_created_at", "slack_messages", ["created_at"])
    op.create_table(
        "slack_threads",
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("debate_id", sa.String(64), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("channel_id", "thread_ts", "debate_id", name="pk_slack_threads"),
        sa.ForeignKeyConstraint(["debate_id"], ["debates.id"], ondelete="CASCADE",
                                name="fk_slack_threads_debate_id_debates"),
    )
    op.create_index("ix_slack_threads_debate_id", "slack_threads", ["debate_id"])


def downgrade() -> None:
    op.drop_table("slack_threads")
    op.drop_table("slack_messages")
