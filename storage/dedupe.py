"""Seen-once keys for inbound Slack deliveries (event ids, action ids, retries).

Slack retries a delivery it thinks failed, and with several replicas each may receive it; the
first insert of (source, key) wins. ON CONFLICT DO NOTHING means a duplicate neither raises nor
poisons the caller's transaction on PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from storage.db import ignoring_insert, write
from storage.slack_rows import SlackDedupeRow


async def first_time(
    session: AsyncSession, *, source: str, key: str, now: datetime | None = None
) -> bool:
    """True the first time (source, key) is seen, False every later time."""
    values = {"source": source, "key": key, "created_at": now or utcnow()}
    result = await write(session, ignoring_insert(session, SlackDedupeRow,
                                                  conflict=("source", "key"), returning=("key",)),
                         values)
    return result.scalar_one_or_none() is not None


async def purge(session: AsyncSession, *, before: datetime) -> int:
    """Forget keys seen before `before` (Slack stops retrying after minutes); how many went."""
    result = await session.execute(
        delete(SlackDedupeRow).where(SlackDedupeRow.created_at < before)
        .returning(SlackDedupeRow.key).execution_options(synchronize_session=False)
    )
    return len(result.all())
