"""Replay bookkeeping leaves the request; steps count the provider's billed replies.

`debates.reused_steps` holds the parent's steps a replay reads instead of calling. It used to ride
in `request.options.replay`, where a REST body could set it; the rows that have it are moved.
`steps.calls` counts the replies the provider billed for a step (`attempts` also counts the
requests it refused, a 429 say); for rows already stored the two were the same or unknown.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models do.
JSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_debates = sa.table("debates", sa.column("id", sa.String(64)), sa.column("request", JSON),
                    sa.column("parent_id", sa.String(64)), sa.column("reused_steps", JSON))


def _moved(request: dict[str, Any]) -> tuple[dict[str, Any], list[str] | None]:
    """The request without its replay bookkeeping, and the steps it reused (None: none)."""
    options = request.get("options")
    if not isinstance(options, dict) or "replay" not in options:
        return request, None
    replay = options.get("replay")
    reuse = replay.get("reuse") if isinstance(replay, dict) else None
    kept = {k: v for k, v in options.items() if k != "replay"}
    steps = [str(k) for k in reuse] if isinstance(reuse, list) else []
    return {**request, "options": kept}, steps


def upgrade() -> None:
    op.add_column("debates", sa.Column("reused_steps", JSON, nullable=True))
    op.add_column("steps", sa.Column("calls", sa.Integer(), nullable=False, server_default="0"))
    op.execute("UPDATE steps SET calls = attempts")
    connection = op.get_bind()
    rows = connection.execute(sa.select(_debates.c.id, _debates.c.request)
                              .where(_debates.c.parent_id.is_not(None))).all()
    for debate_id, request in rows:
        if not isinstance(request, dict):
            continue
        cleaned, steps = _moved(request)
        if steps is not None:
            connection.execute(sa.update(_debates).where(_debates.c.id == debate_id)
                               .values(request=cleaned, reused_steps=steps))


def downgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(_debates.c.id, _debates.c.request, _debates.c.parent_id,
                                        _debates.c.reused_steps)
                              .where(_debates.c.reused_steps.is_not(None))).all()
    for debate_id, request, parent_id, steps in rows:
        options = {**(request.get("options") or {}),
                   "replay": {"source": parent_id, "reuse": list(steps or [])}}
        connection.execute(sa.update(_debates).where(_debates.c.id == debate_id)
                           .values(request={**request, "options": options}))
    with op.batch_alter_table("steps") as batch:
        batch.drop_column("calls")
    with op.batch_alter_table("debates") as batch:
        batch.drop_column("reused_steps")
