"""SQLite's one-trip cursor (storage/sqlite_driver.py) behaves as aiosqlite's: short and long
results, streamed results, many-row writes, row counts, errors and transactions."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from storage import sqlite_driver
from storage.db import Database
from storage.errors import AlreadyExists
from tests.support import storage_fixtures as fx

sqlite_db = fx.sqlite_db  # fixture (until conftest.py imports it)
ROWS = 2 * sqlite_driver.CHUNK + 7   # past two chunks: the rest is fetched a chunk at a time


async def _table(db: Database) -> None:
    async with db.transaction() as session:
        await session.execute(text("CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT)"))
        await session.execute(text("INSERT INTO t (n, label) VALUES (:n, :label)"),
                              [{"n": n, "label": f"row {n}"} for n in range(ROWS)])


async def test_engine_uses_the_one_trip_cursor(sqlite_db: Database) -> None:
    async with sqlite_db.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert isinstance(raw.driver_connection, sqlite_driver.OneTripConnection)


@pytest.mark.parametrize("limit", [0, 1, sqlite_driver.CHUNK - 1, sqlite_driver.CHUNK,
                                   sqlite_driver.CHUNK + 1, ROWS])
async def test_every_row_comes_back_whatever_the_size(sqlite_db: Database, limit: int) -> None:
    await _table(sqlite_db)
    async with sqlite_db.transaction(readonly=True) as session:
        rows = (await session.execute(text("SELECT n, label FROM t ORDER BY n LIMIT :k"),
                                      {"k": limit})).all()
    assert [tuple(r) for r in rows] == [(n, f"row {n}") for n in range(limit)]


async def test_a_streamed_result_arrives_whole_and_in_order(sqlite_db: Database) -> None:
    await _table(sqlite_db)
    async with sqlite_db.transaction(readonly=True) as session:
        stream = await session.stream(text("SELECT n FROM t ORDER BY n")
                                      .execution_options(yield_per=300))
        seen = [row.n async for row in stream]
        first = (await session.execute(text("SELECT n FROM t ORDER BY n"))).first()
    assert seen == list(range(ROWS))
    assert first is not None and first.n == 0


async def test_writes_report_their_rows_and_roll_back(sqlite_db: Database) -> None:
    await _table(sqlite_db)
    async with sqlite_db.transaction() as session:
        changed = await session.execute(text("UPDATE t SET label = 'x' WHERE n < 10"))
        assert changed.rowcount == 10  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        async with sqlite_db.transaction() as session:
            await session.execute(text("DELETE FROM t"))
            raise RuntimeError("undo")
    async with sqlite_db.transaction(readonly=True) as session:
        count = (await session.execute(text("SELECT count(*) FROM t"))).scalar_one()
        relabelled = (await session.execute(
            text("SELECT count(*) FROM t WHERE label = 'x'"))).scalar_one()
    assert (count, relabelled) == (ROWS, 10)


async def test_a_constraint_violation_is_the_domain_error(sqlite_db: Database) -> None:
    await _table(sqlite_db)
    with pytest.raises(AlreadyExists):
        async with sqlite_db.transaction() as session:
            await session.execute(text("INSERT INTO t (n, label) VALUES (1, 'again')"))
    async with sqlite_db.transaction(readonly=True) as session:
        label = (await session.execute(text("SELECT label FROM t WHERE n = 1"))).scalar_one()
    assert label == "row 1"


async def test_an_open_given_up_closes_the_connection_it_made(tmp_path: Path) -> None:
    """A task cancelled while its connection opens (a debate stopped as the pool opened one):
    aiosqlite forgot the sqlite3 connection its thread went on to make, which stayed open until
    the garbage collector warned of it (seen once as a ResourceWarning in the suite)."""
    made: list[sqlite3.Connection] = []
    go_on = threading.Event()

    def slow_open() -> sqlite3.Connection:
        go_on.wait(5)
        made.append(sqlite3.connect(tmp_path / "x.db", check_same_thread=False))
        return made[0]

    connection = sqlite_driver.OneTripConnection(slow_open, 64)
    opening = asyncio.ensure_future(_awaited(connection))
    await asyncio.sleep(0.05)          # the thread is inside the open
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    go_on.set()
    await asyncio.to_thread(connection._thread.join, 5)
    assert not connection._thread.is_alive()
    (opened,) = made
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened.execute("SELECT 1")


async def test_a_finished_open_is_closed_once_by_its_owner(tmp_path: Path) -> None:
    connection = sqlite_driver.connect(tmp_path / "y.db")
    await connection
    async with connection.cursor() as cursor:
        await cursor.execute("SELECT 1")
        assert [tuple(row) for row in await cursor.fetchall()] == [(1,)]
    await connection.close()
    assert not connection._opened
    await asyncio.to_thread(connection._thread.join, 5)
    assert not connection._thread.is_alive()


async def _awaited(connection: sqlite_driver.OneTripConnection) -> None:
    await connection
