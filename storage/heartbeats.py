"""Heartbeats: a process's proof that the database takes writes, not only answers reads.

`SELECT 1` succeeds on a read-only file, a hot standby or a full disk; a committed upsert does
not. The health check beats under the process's name; housekeeping forgets old beats.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import upserting, write
from storage.service_rows import HeartbeatRow


async def beat(session: AsyncSession, *, owner: str, now: datetime) -> None:
    """Record that `owner` wrote at `now` (one row per owner, replaced each time)."""
    await write(session, upserting(session, HeartbeatRow, conflict=("owner",),
                                   update=("beat_at",)), {"owner": owner, "beat_at": now})


async def purge(session: AsyncSession, *, before: datetime) -> int:
    """Forget beats older than `before` (processes long gone); how many went."""
    result = await session.execute(
        delete(HeartbeatRow).where(HeartbeatRow.beat_at < before)
        .returning(HeartbeatRow.owner).execution_options(synchronize_session=False)
    )
    return len(result.all())
