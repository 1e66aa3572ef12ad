"""The budget ledger indexed by debate: every charge and settle sums one debate's rows, and the
(day, debate_id) index cannot serve a lookup without the day, so each one scanned the whole
ledger (every day's), a cost that grew with every debate ever run.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_budget_ledger_debate_id", "budget_ledger", ["debate_id"])


def downgrade() -> None:
    op.drop_index("ix_budget_ledger_debate_id", table_name="budget_ledger")
