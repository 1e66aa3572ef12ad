"""Console session generations: one counter per person, moved on at each sign-out. A signed
session names the generation it began in; once the person's counter has moved past it, the
session is over, wherever its cookie was copied to (bot/service/sessions.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import dialect_of
from storage.service_rows import SessionGenerationRow

Row = SessionGenerationRow


async def generation(session: AsyncSession, user: str) -> int:
    """`user`'s current generation (0 until they first sign out)."""
    found = await session.scalar(select(Row.generation).where(Row.user_id == user))
    return int(found or 0)


async def advance(session: AsyncSession, user: str, *, now: datetime) -> int:
    """Move `user`'s generation on by one (ending every session begun before); the new one."""
    values = {"user_id": user, "generation": 1, "changed_at": now}
    base = (postgresql.insert(Row) if dialect_of(session) == "postgresql"
            else sqlite.insert(Row)).values(values)
    stmt = base.on_conflict_do_update(
        index_elements=["user_id"],
        set_={"generation": Row.generation + 1, "changed_at": base.excluded.changed_at},
    ).returning(Row.generation)
    return int((await session.execute(stmt)).scalar_one())


__all__ = ["advance", "generation"]
