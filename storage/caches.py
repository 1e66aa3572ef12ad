"""The judge cache: a judge's verdict on identical inputs, reused until it expires."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import upsert
from storage.models import JudgeCacheRow, jsonable


async def judge_cache_get(session: AsyncSession, key: str, now: datetime) -> Any | None:
    """The cached value, or None if missing or expired."""
    return await session.scalar(
        select(JudgeCacheRow.value).where(JudgeCacheRow.key == key, JudgeCacheRow.expires_at > now)
    )


async def judge_cache_put(
    session: AsyncSession, key: str, value: Any, expires_at: datetime
) -> None:
    """Store or replace the value under `key`."""
    await session.execute(upsert(
        session, JudgeCacheRow,
        {"key": key, "value": jsonable(value), "expires_at": expires_at},
        conflict=("key",), update=("value", "expires_at"),
    ))


async def judge_cache_purge(session: AsyncSession, now: datetime) -> int:
    """Delete expired entries; how many went."""
    result = await session.execute(
        delete(JudgeCacheRow).where(JudgeCacheRow.expires_at <= now)
        .returning(JudgeCacheRow.key).execution_options(synchronize_session=False)
    )
    return len(result.all())
