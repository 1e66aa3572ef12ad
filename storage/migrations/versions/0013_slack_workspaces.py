"""Slack workspaces found not to allow streaming (chat.startStream refused), with the error and
when it was learnt: remembered across processes and restarts, retried after a day.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "slack_workspaces",
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("streaming_error", sa.String(64), nullable=False),
        sa.Column("streaming_refused_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("team_id", name="pk_slack_workspaces"),
    )


def downgrade() -> None:
    op.drop_table("slack_workspaces")
