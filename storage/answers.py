"""Which model each endpoint answered with for a name asked (engine/money/answering.py), kept so
that every process (serve, workers, `dialectic run`, `estimate`) prices what answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import upserting, write
from storage.models import AnsweringModelRow


async def known(session: AsyncSession, endpoint: str) -> dict[str, str]:
    """Name asked -> model that answered, at `endpoint`."""
    rows = await session.execute(
        select(AnsweringModelRow.asked, AnsweringModelRow.answered)
        .where(AnsweringModelRow.endpoint == endpoint))
    return {asked: answered for asked, answered in rows}


async def learn(session: AsyncSession, *, endpoint: str, asked: str, answered: str,
                now: datetime) -> None:
    """Record (or change) what answers for `asked` at `endpoint`; two processes learning the
    same at once both succeed."""
    await write(session, upserting(session, AnsweringModelRow, conflict=("endpoint", "asked"),
                                   update=("answered", "learned_at")),
                {"endpoint": endpoint, "asked": asked, "answered": answered, "learned_at": now})
