"""Steps keep the cached and reasoning tokens the provider reported (parts of the prompt and the
completion tokens: cached ones are billed at a discount, reasoning ones as output). Steps stored
before this read as 0 of each, which is what their cost was computed with.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("cached_tokens", "reasoning_tokens")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("steps", sa.Column(name, sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("steps") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
