"""Purges of a workspace's data (an uninstall with DIALECTIC_UNINSTALL_DATA=purge, or
`dialectic workspaces purge`): one row per workspace, written before the first batch is erased,
so a restart finishes a purge a crash cut short (storage/purges.py).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True),
                                                   "postgresql")


def upgrade() -> None:
    op.create_table(
        "workspace_purges",
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("requested_by", sa.String(255), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("counts", _json(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("team_id", name="pk_workspace_purges"),
    )


def downgrade() -> None:
    op.drop_table("workspace_purges")
