"""Debates newest first: the listings (`GET /api/debates`, the console's home, `dialectic list`,
App Home) ask for the newest debates, and the day's spend asks for one day's; without an index
on `created_at` both read and sort the whole table (0.4-0.5 s a page at 50,000 debates).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_debates_created_at_id", "debates", ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_debates_created_at_id", table_name="debates")
