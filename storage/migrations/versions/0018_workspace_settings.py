"""Per-workspace settings: a workspace's daily budget, reviewers and review channel and per-preset
alpha cut-offs, over the operator's defaults (NULL: not set).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True),
                                                   "postgresql")


def upgrade() -> None:
    op.create_table(
        "workspace_settings",
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("daily_budget_usd", sa.Float(), nullable=True),
        sa.Column("reviewers", _json(), nullable=True),
        sa.Column("review_channel", sa.String(64), nullable=True),
        sa.Column("thresholds", _json(), nullable=True),
        sa.Column("updated_by", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("team_id", name="pk_workspace_settings"),
    )


def downgrade() -> None:
    op.drop_table("workspace_settings")
