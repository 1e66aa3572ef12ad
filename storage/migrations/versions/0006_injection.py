"""Debates flagged for text addressed to the AI in their untrusted material (issue 15).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of the model type: a migration must not change when models do.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.add_column("debates", sa.Column("injection", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("debates") as batch:
        batch.drop_column("injection")
