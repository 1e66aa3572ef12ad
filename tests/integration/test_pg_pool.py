"""PostgreSQL's connection pool (storage/db.py): the connections a burst opened are kept (an
overflow connection was opened and closed for each transaction past ten: a server process forked
and every statement prepared again), and a connection that sat idle is pinged before it is used,
so one whose server process has gone (a restart, a failover) is replaced, not handed out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, text

from storage import db as storage_db
from storage.db import Database

pytestmark = pytest.mark.postgres


def _connects(database: Database) -> list[int]:
    opened: list[int] = []

    def on_connect(_dbapi: Any, _record: Any) -> None:
        opened.append(1)

    event.listen(database.engine.sync_engine.pool, "connect", on_connect)
    return opened


async def _burst(database: Database, size: int) -> None:
    async def one() -> None:
        async with database.transaction() as session:
            await session.execute(text("SELECT pg_sleep(0.05)"))
    await asyncio.gather(*(one() for _ in range(size)))


async def test_a_burst_keeps_its_connections_for_the_next(pg_db: Database) -> None:
    opened = _connects(pg_db)
    await _burst(pg_db, 30)
    first = len(opened)
    assert first >= 11   # past the old pool size of ten
    for _ in range(3):
        await _burst(pg_db, 30)
    assert len(opened) == first   # not one opened again


async def _own_pid(database: Database) -> int:
    async with database.transaction() as session:
        return int((await session.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def _terminate(url: str, pid: int) -> None:
    other = Database(url)
    try:
        async with other.transaction() as session:
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await other.dispose()


async def test_an_idle_connection_whose_server_process_died_is_replaced(
        pg_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_db.url.render_as_string(hide_password=False)
    pid = await _own_pid(pg_db)   # the pool's one connection, back in the pool
    await _terminate(url, pid)
    monkeypatch.setattr(storage_db, "IDLE_PING_S", 0.0)   # it has been idle "long enough"
    assert await _own_pid(pg_db) != pid   # pinged, found dead, replaced: no error


async def test_a_connection_in_steady_use_is_not_pinged(
        pg_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trade-off: a connection back in the pool for less than IDLE_PING_S is used unpinged;
    if its server process has gone, that one transaction fails, and the pool replaces it."""
    url = pg_db.url.render_as_string(hide_password=False)
    pid = await _own_pid(pg_db)
    await _terminate(url, pid)
    monkeypatch.setattr(storage_db, "IDLE_PING_S", 3600.0)
    with pytest.raises(Exception):  # noqa: B017  (whichever error the driver gives)
        await _own_pid(pg_db)
    assert await _own_pid(pg_db) != pid
