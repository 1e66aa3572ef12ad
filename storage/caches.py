"""The judge cache: a judge's verdict on identical inputs, reused until it expires."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from engine.domain import utcnow
from storage.arrays import PerDialect, among
from storage.db import Database, upserting, write
from storage.journal import BatchWriter, journal_for, lookups_for
from storage.models import JudgeCacheRow, jsonable


async def judge_cache_get(session: AsyncSession, key: str, now: datetime) -> Any | None:
    """The cached value, or None if missing or expired."""
    return await session.scalar(
        select(JudgeCacheRow.value).where(JudgeCacheRow.key == key, JudgeCacheRow.expires_at > now)
    )


async def judge_cache_get_many(session: AsyncSession, keys: list[str], fresh: bool
                               ) -> tuple[list[Any | None], None]:
    """`judge_cache_get` of many keys, now, in one query (a batch function of `lookups_for`)."""
    rows = await write(session, _GET_MANY(session), {"keys": list(set(keys)), "now": utcnow()})
    found: dict[str, Any] = {key: value for key, value in rows}
    values: list[Any | None] = []
    given: set[str] = set()
    for key in keys:  # the same key asked twice: each caller gets its own copy
        value = found.get(key)
        values.append(copy.deepcopy(value) if key in given else value)
        given.add(key)
    return values, None


async def judge_cache_put(
    session: AsyncSession, key: str, value: Any, expires_at: datetime
) -> None:
    """Store or replace the value under `key`."""
    await write(session, _put(session),
                {"key": key, "value": jsonable(value), "expires_at": expires_at})


async def judge_cache_put_batch(session: AsyncSession, items: list[tuple[str, Any, datetime]],
                                fresh: bool) -> tuple[list[None], None]:
    """`judge_cache_put` for many entries in one statement (the journal's batch function); a key
    put twice in one batch keeps its last value."""
    latest = {key: (value, expires_at) for key, value, expires_at in items}
    rows = [{"key": key, "value": jsonable(value), "expires_at": expires_at}
            for key, (value, expires_at) in latest.items()]
    await write(session, _put(session), rows)
    return [None] * len(items), None


def _put(session: AsyncSession) -> Insert:
    return upserting(session, JudgeCacheRow, conflict=("key",), update=("value", "expires_at"))


_CACHE = cast(Table, JudgeCacheRow.__table__)
#: built once (its values passed as parameters: docs/benchmarks.md)
_GET_MANY = PerDialect(lambda dialect: select(_CACHE.c.key, _CACHE.c.value)
                      .where(among(_CACHE.c.key, "keys", dialect),
                             _CACHE.c.expires_at > bindparam("now")))


class DbStepCache:
    """engine.ports.StepCache on the judge_cache table, entries kept `ttl_seconds`."""

    def __init__(self, db: Database, *, ttl_seconds: float) -> None:
        self.db = db
        self.ttl = timedelta(seconds=ttl_seconds)

    async def get(self, key: str) -> dict[str, Any] | None:
        """Read with the other running debates' lookups of the moment (one query for all)."""
        value = await lookups_for(self.db).read(judge_cache_get_many, key)
        return value if isinstance(value, dict) else None

    async def put(self, key: str, output: dict[str, Any]) -> None:
        """Committed with the running debates' other writes (the journal's group commit)."""
        await journal_for(self.db).write(*self.write_of(key, output))

    def write_of(self, key: str, output: dict[str, Any]) -> tuple[BatchWriter, Any]:
        """`put` as a journal write, for a caller that submits it with others (a step's)."""
        return judge_cache_put_batch, (key, output, utcnow() + self.ttl)


async def judge_cache_purge(session: AsyncSession, now: datetime) -> int:
    """Delete expired entries; how many went."""
    result = await session.execute(
        delete(JudgeCacheRow).where(JudgeCacheRow.expires_at <= now)
        .returning(JudgeCacheRow.key).execution_options(synchronize_session=False)
    )
    return len(result.all())
