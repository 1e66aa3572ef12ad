"""The model each endpoint answered with for a name asked (a deployment, an alias), and when that
was learnt: holds, predictions and estimates price what answers, in every process.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "answering_models",
        sa.Column("endpoint", sa.String(512), nullable=False),
        sa.Column("asked", sa.String(255), nullable=False),
        sa.Column("answered", sa.String(255), nullable=False),
        sa.Column("learned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("endpoint", "asked", name="pk_answering_models"),
    )


def downgrade() -> None:
    op.drop_table("answering_models")
