"""SQLite through aiosqlite with one trip to its thread per statement.

aiosqlite runs every sqlite3 call on its connection's own thread, and SQLAlchemy's adapter makes
four such calls per statement (open a cursor, execute, fetch the rows, close): four round trips
between the event loop and the thread, ~65 us of CPU each on a small VM, most of a statement's
cost. The cursor here opens, executes, fetches (up to `CHUNK` rows) and closes in one trip; a
longer result (`session.stream`) fetches the rest a chunk per trip. Everything else is
aiosqlite's own connection (commit, rollback, close); plugged in through SQLAlchemy's
`async_creator_fn` connect argument (storage/db.py).

Inside a write transaction (after `BEGIN IMMEDIATE`: storage/db.py starts every one so) a
statement runs on the event loop's own thread, no trip at all: holding SQLite's write lock, it
waits on no other connection or process (in WAL mode readers never block a writer, nor it them),
so it cannot stall the loop on a lock, and the trip cost more than the statement (~150 us of CPU
against ~80 us for a small one). The `BEGIN IMMEDIATE` that takes the lock runs there too
when the lock is free (this process's writers take turns before they begin, so only another
process can hold it), tried with no busy timeout; when it is held, the BEGIN waits for it on the
thread. What may wait stays on the thread: that BEGIN, commit and rollback (a commit may
checkpoint the WAL, an fsync), and statements outside a write transaction. A commit or rollback
with no transaction open (the pool's reset after a commit) does nothing, and makes no trip.
On a VM short of cores each trip costs more than its two thread switches: the woken thread
preempts the loop's, and the two hand the GIL back and forth.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import aiosqlite

CHUNK = 1000  # rows fetched with the statement; the rest of a longer result a chunk at a time
_BEGIN_WRITING = "BEGIN IMMEDIATE"   # what storage/db.py begins a write transaction with

_Description = tuple[tuple[Any, ...], ...] | None


class OneTripConnection(aiosqlite.Connection):
    """aiosqlite's connection whose cursors cost one trip to the thread per statement, and which
    closes what an abandoned open made (below)."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], iter_chunk_size: int) -> None:
        self._opened: list[sqlite3.Connection] = []   # touched on the connection's thread only

        def opening() -> sqlite3.Connection:
            connection = connector()
            self._opened.append(connection)
            return connection

        super().__init__(opening, iter_chunk_size)

    async def _connect(self) -> OneTripConnection:
        await super()._connect()
        self._opened.clear()   # the open finished: aiosqlite owns (and closes) the connection
        return self

    def stop(self) -> asyncio.Future[Any] | None:
        """Stop the thread. When an open is given up (its caller cancelled: a debate's task
        stopped while the pool opened a connection), aiosqlite forgets the sqlite3 connection its
        thread still makes (omnilib/aiosqlite#259), and it stayed open until the garbage collector
        found it: close it on its thread first."""
        if self._connection is None:
            self._tx.put_nowait((None, self._close_opened))
        return super().stop()

    def _close_opened(self) -> None:
        while self._opened:
            self._opened.pop().close()

    #: whether the open transaction began IMMEDIATE (holds the write lock): then statements run
    #: on the loop's thread (see the module's docstring)
    writing = False
    _busy_ms: int | None = None   # the connection's busy timeout, read once

    def cursor(self) -> OneTripCursor:  # type: ignore[override]
        return OneTripCursor(self)

    def inline(self, operation: str) -> sqlite3.Connection | None:
        """The sqlite3 connection if `operation` may run on the calling thread, else None."""
        if operation.startswith("BEGIN"):
            self.writing = operation == _BEGIN_WRITING
            return None
        connection = self._connection
        if self.writing and connection is not None and connection.in_transaction:
            return connection
        return None

    def begin_here(self) -> bool:
        """`BEGIN IMMEDIATE` on the calling thread if SQLite's write lock is free now (this
        process's writers take turns before they begin: only another process can hold it);
        False, having waited for nothing, when it is held: the BEGIN then waits on the thread."""
        connection = self._connection
        if connection is None or connection.in_transaction:
            return False
        if self._busy_ms is None:
            self._busy_ms = int(connection.execute("PRAGMA busy_timeout").fetchone()[0])
        connection.execute("PRAGMA busy_timeout=0")
        try:
            connection.execute(_BEGIN_WRITING)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                raise
            return False
        finally:
            connection.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        self.writing = True
        return True

    async def commit(self) -> None:
        if not self._idle():   # else nothing to commit: no trip
            await super().commit()

    async def rollback(self) -> None:
        if not self._idle():   # else nothing to roll back (the pool's reset after a commit)
            await super().rollback()

    def _idle(self) -> bool:
        """Whether no transaction is open (sqlite3's commit and rollback then do nothing)."""
        connection = self._connection
        return connection is not None and not connection.in_transaction

    async def run(self, function: Any, *args: Any) -> Any:
        """`function(*args)` on the connection's thread."""
        execute = cast(Callable[..., Awaitable[Any]], self._execute)  # aiosqlite's, untyped
        return await execute(function, *args)


class OneTripCursor:
    """The part of aiosqlite's cursor that SQLAlchemy's adapter uses."""

    def __init__(self, connection: OneTripConnection) -> None:
        self._connection = connection
        self._open: sqlite3.Cursor | None = None   # while rows remain to fetch
        self._rows: list[Any] = []
        self.arraysize = 1
        self.description: _Description = None
        self.rowcount = -1
        self.lastrowid: int | None = None

    async def __aenter__(self) -> OneTripCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def execute(self, operation: str, parameters: Any = None) -> OneTripCursor:
        return await self._start(operation, () if parameters is None else parameters, False)

    async def executemany(self, operation: str, parameters: Sequence[Any]) -> OneTripCursor:
        return await self._start(operation, parameters, True)

    async def _start(self, operation: str, parameters: Any, many: bool) -> OneTripCursor:
        await self.close()
        if operation == _BEGIN_WRITING and self._connection.begin_here():
            self._open, self.description, self.rowcount, self.lastrowid = None, None, -1, None
            return self
        here = self._connection.inline(operation)
        if here is not None:
            done = _statement(here, operation, parameters, many)
        else:
            done = await self._connection.run(_statement, self._connection._conn, operation,
                                              parameters, many)
        self._open, self.description, self.rowcount, self.lastrowid, self._rows = done
        return self

    async def fetchone(self) -> Any:
        rows = await self.fetchmany(1)
        return rows[0] if rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        size = size or self.arraysize
        if len(self._rows) < size and self._open is not None:
            self._rows += await self._more(max(size, CHUNK))
        taken, self._rows = self._rows[:size], self._rows[size:]
        return taken

    async def fetchall(self) -> list[Any]:
        while self._open is not None:
            self._rows += await self._more(CHUNK)
        rows, self._rows = self._rows, []
        return rows

    async def _more(self, size: int) -> list[Any]:
        cursor = self._open
        assert cursor is not None
        rows: list[Any] = await self._connection.run(cursor.fetchmany, size)
        if len(rows) < size:
            self._open = None
            await self._connection.run(cursor.close)
        return rows

    async def close(self) -> None:
        self._rows = []
        if self._open is not None:
            cursor, self._open = self._open, None
            await self._connection.run(cursor.close)


def _statement(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool
               ) -> tuple[sqlite3.Cursor | None, _Description, int, int | None, list[Any]]:
    """On the connection's thread: execute, fetch the first chunk, close when that was all."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        else:
            cursor.execute(operation, parameters)
        rows = cursor.fetchmany(CHUNK) if cursor.description else []
    except BaseException:   # whatever stops it (an SQL error, an interrupt): close, re-raise
        cursor.close()
        raise
    state = (cursor.description, cursor.rowcount, cursor.lastrowid, rows)
    if len(rows) < CHUNK:
        cursor.close()
        return (None, *state)
    return (cursor, *state)


def connect(database: str | Path, **kwargs: Any) -> OneTripConnection:
    """`aiosqlite.connect`, with the one-trip cursor (SQLAlchemy's `async_creator_fn`)."""
    location = database if isinstance(database, str) else str(database)

    def connector() -> sqlite3.Connection:
        # used from the loop's thread too, never at once: each call is awaited before the next
        connection: sqlite3.Connection = sqlite3.connect(
            location, **{**kwargs, "check_same_thread": False})
        return connection

    connection = OneTripConnection(connector, 64)
    connection._thread.daemon = True  # as SQLAlchemy's own connect does
    return connection
