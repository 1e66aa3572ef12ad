"""Storage fixtures: a freshly migrated `Database` on SQLite and on PostgreSQL.

    from tests.support.storage_fixtures import *  # in conftest.py: db, sqlite_db, pg_db

`db` runs each test twice: on a SQLite file in tmp_path and on PostgreSQL (the server
`scripts/with-postgres.sh` starts; skipped, saying so, when DIALECTIC_TEST_PG_URL is unset). Each
PostgreSQL test gets its own database, dropped afterwards. Both are copies of a template that the
real Alembic migrations (`Database.upgrade()`) built once per test process: a SQLite file copied
with SQLite's backup API, a PostgreSQL database made with CREATE DATABASE … TEMPLATE (migrating
each test's database from empty cost a second a test on PostgreSQL, a fifth of one on SQLite).
`migrate=False` gives an empty database for the tests of the migrations themselves.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from engine.domain import DebateRequest, utcnow
from storage import debates
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin

__all__ = [
    "BACKENDS", "PG_URL_ENV", "add_debate", "admin_sql", "db", "make_record", "migrated_database",
    "pg_db", "sqlite_db",
]

PG_URL_ENV = "DIALECTIC_TEST_PG_URL"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _pg_url() -> str:
    url = os.environ.get(PG_URL_ENV)
    if not url:
        pytest.skip(f"{PG_URL_ENV} is not set: run the suite under scripts/with-postgres.sh "
                    "(make test) to include PostgreSQL")
    return url


#: this process's migrated templates: the SQLite file, and per server URL the PostgreSQL
#: template database's name (dropped by `drop_templates`, at the end of the run: tests/conftest.py)
_templates: dict[str, str] = {}
_pg_templates: dict[str, str] = {}


async def _sqlite_template() -> Path:
    if "sqlite" not in _templates:
        path = Path(tempfile.mkdtemp(prefix="dialectic-test-template-")) / "dialectic.db"
        template = Database(f"sqlite+aiosqlite:///{path}")
        try:
            await template.upgrade()
        finally:
            await template.dispose()
        _templates["sqlite"] = str(path)
    return Path(_templates["sqlite"])


def _copy_sqlite(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


async def admin_sql(url: str, statement: str) -> None:
    """Run one statement outside a transaction (CREATE or DROP DATABASE) on the server."""
    admin = create_async_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            await connection.exec_driver_sql(statement)
    finally:
        await admin.dispose()


def _on(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def _pg_template(url: str) -> str:
    """This process's migrated template database on the server at `url`."""
    if url not in _pg_templates:
        name = f"template_{uuid.uuid4().hex[:12]}"
        await admin_sql(url, f"CREATE DATABASE {name}")
        template = Database(_on(url, name))
        try:
            await template.upgrade()
        finally:
            await template.dispose()
        _pg_templates[url] = name
    return _pg_templates[url]


def drop_templates() -> None:
    """Delete this process's templates (at the end of a run: no event loop is running)."""
    for url, name in list(_pg_templates.items()):
        asyncio.run(admin_sql(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        del _pg_templates[url]
    if "sqlite" in _templates:
        shutil.rmtree(Path(_templates.pop("sqlite")).parent, ignore_errors=True)


@asynccontextmanager
async def migrated_database(
    backend: str, tmp_path: Path, *, migrate: bool = True, **options: Any
) -> AsyncIterator[Database]:
    """A Database on a SQLite file or a PostgreSQL database of its own, migrated to head (a copy
    of the template: see the module's docstring), or empty with `migrate=False`. `options` go to
    `Database`."""
    if backend == "sqlite":
        path = tmp_path / "data" / "dialectic.db"
        if migrate:
            _copy_sqlite(await _sqlite_template(), path)
        database = Database(f"sqlite+aiosqlite:///{path}", **options)
        try:
            yield database
        finally:
            await database.dispose()
        return
    url = _pg_url()
    name = f"test_{uuid.uuid4().hex[:12]}"
    template = f" TEMPLATE {await _pg_template(url)}" if migrate else ""
    await admin_sql(url, f"CREATE DATABASE {name}{template}")
    database = Database(_on(url, name), **options)
    try:
        yield database
    finally:
        await database.dispose()
        await admin_sql(url, f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=BACKENDS)
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    async with migrated_database(request.param, tmp_path) as database:
        yield database


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    async with migrated_database("sqlite", tmp_path) as database:
        yield database


@pytest.fixture
async def pg_db(tmp_path: Path) -> AsyncIterator[Database]:
    async with migrated_database("postgresql", tmp_path) as database:
        yield database


def make_record(
    topic: str = "Should we move billing to PostgreSQL?", *,
    status: DebateStatus = DebateStatus.QUEUED, created_at: datetime | None = None,
    requested_by: str = "U123", **fields: Any,
) -> DebateRecord:
    """A DebateRecord as the service would insert it."""
    created = created_at or utcnow()
    return DebateRecord(
        id=fields.pop("id", uuid.uuid4().hex),
        request=DebateRequest(topic=topic, mode="simple", requested_by=requested_by),
        mode="simple", preset=fields.pop("preset", "default"), status=status,
        origin=Origin(surface="slack", channel_id="C1", thread_ts="1.0"),
        requested_by=requested_by, estimate_usd=0.05, reserved_usd=0.05,
        created_at=created, updated_at=created, **fields,
    )


async def add_debate(
    database: Database, topic: str = "Should we move billing to PostgreSQL?", *,
    topic_key: str = "key", seconds_ago: float = 0.0, **fields: Any,
) -> DebateRecord:
    """Insert a debate in its own transaction."""
    record = make_record(topic, created_at=utcnow() - timedelta(seconds=seconds_ago), **fields)
    async with database.transaction() as session:
        return await debates.create(session, record=record, topic_key=topic_key)
