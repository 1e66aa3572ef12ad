"""What providers' 400s taught per (endpoint, model): kept across processes and restarts, so a
parameter refused once is never sent again, until `dialectic doctor --forget`.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "provider_lessons",
        sa.Column("endpoint", sa.String(512), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("lesson", sa.JSON(none_as_null=True).with_variant(
            postgresql.JSONB(none_as_null=True), "postgresql"), nullable=False),
        sa.Column("learned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("endpoint", "model", name="pk_provider_lessons"),
    )


def downgrade() -> None:
    op.drop_table("provider_lessons")
