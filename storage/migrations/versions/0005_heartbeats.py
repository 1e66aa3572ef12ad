"""Heartbeats: the health probe's committed write, one row per process.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "heartbeats",
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("beat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", name="pk_heartbeats"),
    )
    op.create_index("ix_heartbeats_beat_at", "heartbeats", ["beat_at"])


def downgrade() -> None:
    op.drop_table("heartbeats")
