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
from storage.db import SQLITE_BUSY_TIMEOUT_MS, Database
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


async def _threads_of(db: Database, *, readonly: bool) -> tuple[int, int]:
    """(the thread a statement ran on, the thread its BEGIN ran on) in one transaction."""
    async with db.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        assert isinstance(raw, sqlite_driver.OneTripConnection)
        begun: list[int] = []
        raw._conn.create_function("thread_id", 0, threading.get_ident)
        raw._conn.set_trace_callback(
            lambda sql: begun.append(threading.get_ident()) if sql.startswith("BEGIN") else None)
        options = {"dialectic_read_only": True} if readonly else {}
        conn = await conn.execution_options(**options)
        async with conn.begin():
            ran = (await conn.execute(text("SELECT thread_id()"))).scalar_one()
        raw._conn.set_trace_callback(None)
    return ran, begun[-1]   # the BEGIN that began it (one tried first may have found a lock)


async def test_a_write_transactions_statements_run_on_the_loops_thread(
        sqlite_db: Database) -> None:
    loop_thread = threading.get_ident()
    ran, begun = await _threads_of(sqlite_db, readonly=False)
    assert ran == loop_thread          # holding the write lock: no trip to the thread
    assert begun == loop_thread        # free: taken without waiting, no trip either


async def test_a_begin_that_must_wait_for_the_lock_waits_on_the_thread(
        sqlite_db: Database) -> None:
    other = sqlite3.connect(sqlite_db.url.database or "", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")   # as another process holding SQLite's write lock
    try:
        threads = asyncio.create_task(_threads_of(sqlite_db, readonly=False))
        await asyncio.sleep(0.05)      # the BEGIN tried here, found the lock held, and waits
        assert not threads.done()
    finally:
        other.execute("COMMIT")
        other.close()
    ran, begun = await threads
    assert begun != threading.get_ident() and ran == threading.get_ident()
    async with sqlite_db.engine.connect() as conn:   # its busy timeout was given back
        raw = (await conn.get_raw_connection()).driver_connection
        timeout = (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar_one()
    assert isinstance(raw, sqlite_driver.OneTripConnection)
    assert timeout == SQLITE_BUSY_TIMEOUT_MS


async def test_a_commit_or_rollback_with_nothing_open_makes_no_trip(
        sqlite_db: Database) -> None:
    async with sqlite_db.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        assert isinstance(raw, sqlite_driver.OneTripConnection)
        trips: list[object] = []
        run = raw._execute

        async def counted(function: object, *args: object) -> object:
            trips.append(function)
            return await run(function, *args)
        raw._execute = counted  # type: ignore[method-assign]
        await raw.rollback()
        await raw.commit()
        assert trips == []
        await raw.execute("BEGIN")          # a transaction open: each goes to the thread
        await raw.commit()
        await raw.execute("BEGIN")
        await raw.rollback()
        assert len(trips) == 4 and not raw._conn.in_transaction


async def test_a_read_transactions_statements_keep_to_the_connections_thread(
        sqlite_db: Database) -> None:
    loop_thread = threading.get_ident()
    ran, begun = await _threads_of(sqlite_db, readonly=True)
    assert ran != loop_thread and begun != loop_thread


async def test_a_write_lock_held_by_another_process_does_not_stall_the_loop(
        sqlite_db: Database, tmp_path: Path) -> None:
    await _table(sqlite_db)
    other = sqlite3.connect(sqlite_db.url.database or "", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")   # as another process holding SQLite's write lock
    ticks = 0

    async def write() -> None:
        async with sqlite_db.transaction() as session:
            await session.execute(text("UPDATE t SET label = 'late' WHERE n = 0"))

    writing = asyncio.create_task(write())
    while ticks < 50:                  # the loop runs on while the write waits for the lock
        await asyncio.sleep(0.001)
        ticks += 1
    assert not writing.done()
    other.execute("COMMIT")
    other.close()
    await writing
    async with sqlite_db.transaction(readonly=True) as session:
        label = (await session.execute(text("SELECT label FROM t WHERE n = 0"))).scalar_one()
    assert label == "late"
