"""The database: one async engine, short transactions, Alembic migrations, dialect helpers.

SQLite runs in WAL mode and every write transaction starts with `BEGIN IMMEDIATE`, so concurrent
writers queue on the busy timeout instead of failing half-way with "database is locked";
PostgreSQL uses row locks (FOR UPDATE, SKIP LOCKED) and advisory locks in the repositories.
The same repository code runs on both.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, Executable, Result, Table, event, inspect, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import IntegrityError, InvalidatePoolError, SQLAlchemyError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from storage import arrays, permissions, sqlite_driver
from storage.errors import DatabaseUnavailable, translate, unavailable
from storage.models import Base

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 5000
_READ_ONLY = "dialectic_read_only"
SQLITE_LOCK_WAIT_S = 60.0
_MIGRATION_LOCK = 0x0D1A_0001  # pg_advisory_xact_lock key held while migrating



class WriteTurns:
    """SQLite's one writer, taken in turn by this process's writers: the urgent first, then the
    others, each in the order they asked (an asyncio.Lock with two queues)."""

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def acquire(self, urgent: bool = False) -> None:
        if not self._held and not self._urgent and not self._waiting:
            self._held = True
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._urgent if urgent else self._waiting).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():   # handed over as it was cancelled
                self.release()
            raise

    def release(self) -> None:
        for queue in (self._urgent, self._waiting):
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)   # the lock passes to it, still held
                    return
        self._held = False


class Database:
    """An async engine and its sessions. Build one per process; `dispose()` on shutdown."""

    def __init__(
        self,
        url: str,
        *,
        connect_args: Mapping[str, Any] | None = None,
        connections: int = 30,
        echo: bool = False,
    ) -> None:
        self.url: URL = make_url(url)
        args = dict(connect_args or {})
        # every connection kept, none opened past them: an overflow connection was opened and
        # closed again for each transaction past the pool's size (SQLite: a thread and its
        # PRAGMAs; PostgreSQL: a forked server process, every statement prepared again on it,
        # ~100 times a worker in the 200-debate bench)
        options: dict[str, Any] = {"echo": echo, "pool_size": connections, "max_overflow": 0}
        if self.url.get_backend_name() == "sqlite":
            _ensure_sqlite_directory(self.url)
            args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
            if self.url.get_driver_name() == "aiosqlite":  # one thread trip per statement
                args.setdefault("async_creator_fn", sqlite_driver.connect)
            options["pool_timeout"] = SQLITE_LOCK_WAIT_S
        else:
            # asyncpg prepares each statement once per connection and keeps 100 by default:
            # batches of every size (multi-row INSERTs, IN lists) pushed the fixed ones out
            args.setdefault("prepared_statement_cache_size", 500)
        self.engine: AsyncEngine = create_async_engine(self.url, connect_args=args, **options)
        if self.dialect != "sqlite":
            _ping_when_idle(self.engine)
        read_only: dict[str, Any] = {_READ_ONLY: True}
        if self.dialect == "sqlite":
            _install_sqlite_hooks(self.engine)
        else:  # BEGIN READ ONLY in one statement: a stray write fails, and no SET per read
            read_only["postgresql_readonly"] = True
        self._writer = async_sessionmaker(self.engine, expire_on_commit=False)
        self._sqlite_writer = WriteTurns()
        self._reader = async_sessionmaker(self.engine.execution_options(**read_only),
                                          expire_on_commit=False)
        # PostgreSQL: statements that commit on their own (no BEGIN, no COMMIT: two round trips)
        self._statements = None if self.dialect == "sqlite" else async_sessionmaker(
            self.engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False)

    @property
    def where(self) -> str:
        """The database as people name it, without credentials: `db on host:port`, or the
        SQLite file."""
        if self.url.get_backend_name() == "sqlite":
            return f"file {self.url.database or ':memory:'}"
        port = f":{self.url.port}" if self.url.port else ""
        return f"{self.url.database or ''} on {self.url.host or 'localhost'}{port}"

    @property
    def dialect(self) -> str:
        """`"sqlite"` or `"postgresql"`."""
        return self.engine.dialect.name

    @asynccontextmanager
    async def transaction(self, *, readonly: bool = False, urgent: bool = False,
                          alone: bool = False) -> AsyncIterator[AsyncSession]:
        """A session in one transaction: committed on success, rolled back on any exception.
        `urgent`: on SQLite, it takes the write lock before the writers already waiting (a
        short write someone waits on: a Slack start before its ack). `alone`: each statement
        stands alone (one INSERT of rows that need no other, reads that need no common
        snapshot): on PostgreSQL each commits by itself, in autocommit, without the BEGIN and
        COMMIT round trips; on SQLite, as usual.

        `readonly=True` starts a deferred transaction on SQLite, so readers do not queue behind
        writers; do not write in one. Do not open a second transaction inside one on SQLite: the
        inner would wait for the outer's write lock until the busy timeout.
        """
        maker = (self._statements if alone and self._statements is not None
                 else self._reader if readonly else self._writer)
        async with self._write_turn(readonly, urgent):
            try:
                async with maker() as session, session.begin():
                    yield session
            except IntegrityError as exc:  # the border: constraint violations become domain
                raise translate(exc) from exc
            except (SQLAlchemyError, OSError, TimeoutError) as exc:
                raise unavailable(exc, self.where) or exc from exc

    @asynccontextmanager
    async def _write_turn(self, readonly: bool, urgent: bool) -> AsyncIterator[None]:
        """SQLite allows one writer: this process's writers queue on a lock instead of spinning
        in SQLite's busy handler (which, with dozens of debates writing at once, times out with
        "database is locked"). Other processes still meet the busy timeout."""
        if readonly or self.dialect != "sqlite":
            yield
            return
        try:
            await asyncio.wait_for(self._sqlite_writer.acquire(urgent), SQLITE_LOCK_WAIT_S)
        except TimeoutError:
            raise DatabaseUnavailable(
                f"waited {SQLITE_LOCK_WAIT_S:.0f} s for SQLite's write lock (is a transaction "
                "opened inside another?); use PostgreSQL for heavy concurrent load") from None
        try:
            yield
        finally:
            self._sqlite_writer.release()

    async def upgrade(self, revision: str = "head") -> None:
        """Run the Alembic migrations up to `revision` on this database's own engine.

        Replicas starting together take turns (an advisory lock on PostgreSQL, the IMMEDIATE
        transaction on SQLite); the later ones find the schema current and do nothing.
        """
        try:
            if revision == "head" and await self._at_head():
                return   # nothing to do, and Alembic (~0.1 s to import) never loaded
            async with self.engine.begin() as connection:
                if self.dialect == "postgresql":
                    await connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
                    )
                await connection.run_sync(_run_upgrade, revision)
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise unavailable(exc, self.where) or exc from exc

    async def _at_head(self) -> bool:
        """Whether the database is already at the one head revision of the migrations (read
        from their files, not from Alembic)."""
        async with self.engine.connect() as connection:
            current = await connection.run_sync(_current_revisions)
        return current == migration_heads()

    async def dispose(self) -> None:
        await self.engine.dispose()


_REVISION = re.compile(r'^(down_revision|revision)(?:: [^=]+)? = "?([\w]+|None)"?', re.M)


@functools.cache
def migration_heads() -> frozenset[str]:
    """The revisions no migration revises (one, unless branches await a merge)."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for name, value in _REVISION.findall(path.read_text(encoding="utf-8")):
            (revisions if name == "revision" else revised).add(value)
    return frozenset(revisions - revised)


def _current_revisions(connection: Connection) -> frozenset[str]:
    if not inspect(connection).has_table("alembic_version"):
        return frozenset()
    return frozenset(connection.execute(text("SELECT version_num FROM alembic_version"))
                     .scalars())


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration, built in code; works from any working directory."""
    from alembic.config import Config  # loaded only to migrate (see `Database._at_head`)

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _run_upgrade(connection: Connection, revision: str) -> None:
    from alembic import command  # loaded only to migrate (see `Database._at_head`)

    command.upgrade(alembic_config(connection), revision)


def _ensure_sqlite_directory(url: URL) -> None:
    """The database's folder (0700) and file (0600), private when this process creates them
    (storage/permissions.py)."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    permissions.prepare(Path(database).expanduser())


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    """Pragmas on every new connection; SQLAlchemy, not sqlite3, emits BEGIN (IMMEDIATE)."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None  # sqlite3 must not emit its own BEGIN
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        read_only = connection.get_execution_options().get(_READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


#: a pooled PostgreSQL connection idle longer than this is pinged before it is used again
IDLE_PING_S = 1.0


def _ping_when_idle(engine: AsyncEngine) -> None:
    """Pessimistic disconnect handling for the connections that may have gone: one back in the
    pool for over IDLE_PING_S (a restart or a failover takes longer) is pinged as it is checked
    out, and replaced if the server is gone. SQLAlchemy's `pool_pre_ping` pinged every checkout
    (asyncpg: BEGIN, a query, ROLLBACK), ~0.45 ms of a worker's CPU per LLM call in the bench; a
    connection in steady use fails in use instead, and the pool then drops every older one."""
    pool = engine.sync_engine.pool
    dialect = engine.sync_engine.dialect

    @event.listens_for(pool, "checkin")
    def _returned(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def _taken(dbapi_connection: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        returned = record.info.get("returned_at")
        if returned is None or time.monotonic() - returned < IDLE_PING_S:
            return   # new, or in steady use
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:   # as pool_pre_ping: any failure drops the connection
            raise InvalidatePoolError(f"ping failed: {exc!r}") from exc   # reconnect, all older too


def dialect_of(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


def ignoring_insert(session: AsyncSession, model: type[Base], *, conflict: tuple[str, ...],
                    returning: tuple[str, ...] = ()) -> Insert:
    """INSERT ... ON CONFLICT (conflict) DO NOTHING for the session's dialect, without values:
    the rows (keyed by column name) are passed when it is executed (`write`), one, or many as
    one multi-row INSERT. A concurrent duplicate is skipped rather than raised, so the
    transaction stays usable on PostgreSQL without a savepoint; `returning` tells which rows
    went in.

    Built once per dialect, table and shape on the Core table, so SQLAlchemy neither rebuilds the
    statement nor walks the values to key its compiled cache (docs/benchmarks.md, "Statements
    built once")."""
    return _prebuilt(session, model, conflict, (), returning)


def upserting(session: AsyncSession, model: type[Base], *, conflict: tuple[str, ...],
              update: tuple[str, ...], returning: tuple[str, ...] = ()) -> Insert:
    """INSERT ... ON CONFLICT (conflict) DO UPDATE SET each of `update` to the new value, built
    once like `ignoring_insert`; for one row, or many (no key twice)."""
    return _prebuilt(session, model, conflict, update, returning)


def _prebuilt(session: AsyncSession, model: type[Base], conflict: tuple[str, ...],
              update: tuple[str, ...], returning: tuple[str, ...]) -> Insert:
    key = (dialect_of(session), model.__tablename__, conflict, update, returning)
    stmt = _STATEMENTS.get(key)
    if stmt is None:
        table = cast(Table, model.__table__)   # Core: no ORM bookkeeping per row
        if key[0] == "postgresql":
            from sqlalchemy.dialects import postgresql  # with its drivers: on PostgreSQL only

            pg = postgresql.insert(table)
            stmt = pg.on_conflict_do_update(
                index_elements=list(conflict), set_={c: pg.excluded[c] for c in update},
            ) if update else pg.on_conflict_do_nothing(index_elements=list(conflict))
        else:
            lite = sqlite.insert(table)
            stmt = lite.on_conflict_do_update(
                index_elements=list(conflict), set_={c: lite.excluded[c] for c in update},
            ) if update else lite.on_conflict_do_nothing(index_elements=list(conflict))
        if returning:
            stmt = stmt.returning(*(table.c[name] for name in returning))
            if key[0] == "postgresql":   # `write` sends its many rows as arrays
                _SHAPES[id(stmt)] = (table, key[2:])
        _STATEMENTS[key] = stmt
    return stmt


async def write(session: AsyncSession, stmt: Executable,
                params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
                ) -> Result[*tuple[Any, ...]]:
    """Execute a Core statement built once (`ignoring_insert`, `upserting`, a module's
    prebuilt SELECT or UPDATE) with its values as parameters, after flushing what the session
    has pending, as an ORM statement would (its autoflush): what the statement writes or reads
    stays what it was when it was an ORM statement.

    Many rows for an INSERT with RETURNING go, on PostgreSQL, as one array per column
    (storage/arrays.py): one statement text for every batch size, prepared once per
    connection, where a multi-row INSERT is a new text, prepared again, for each size."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    if isinstance(params, Sequence) and params and id(stmt) in _SHAPES:
        dialect = session.get_bind().dialect
        if dialect.name == "postgresql":
            table, (conflict, update, returning) = _SHAPES[id(stmt)]
            columns = tuple(params[0])
            shape = (table.name, columns, conflict, update, returning)
            unnest = _UNNESTS.get(shape)
            if unnest is None:
                unnest = _UNNESTS[shape] = arrays.unnest_insert(dialect, table, *shape[1:])
            return await session.execute(unnest,
                                         arrays.column_arrays(dialect, table, columns, params))
    return await session.execute(stmt, params)


_STATEMENTS: dict[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]],
                  Insert] = {}
#: id of a prebuilt INSERT with RETURNING -> its table and (conflict, update, returning)
_SHAPES: dict[int, tuple[Table, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {}
_UNNESTS: dict[arrays.Shape, Executable] = {}
