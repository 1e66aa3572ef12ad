"""Storage fixtures: a freshly migrated `Database` on SQLite and on PostgreSQL.

    from tests.support.storage_fixtures import *  # in conftest.py: db, sqlite_db, pg_db

`db` runs each test twice: on a SQLite file in tmp_path and on PostgreSQL (the server
`scripts/with-postgres.sh` starts; skipped, saying so, when DIALECTIC_TEST_PG_URL is unset). Each
PostgreSQL test gets its own schema, put first on the search_path, and dropped afterwards; both
are built by the real Alembic migrations (`Database.upgrade()`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from engine.domain import DebateRequest, utcnow
from storage import debates
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin

__all__ = [
    "BACKENDS", "PG_URL_ENV", "add_debate", "db", "make_record", "migrated_database", "pg_db",
    "sqlite_db",
]

PG_URL_ENV = "DIALECTIC_TEST_PG_URL"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _pg_url() -> str:
    url = os.environ.get(PG_URL_ENV)
    if not url:
        pytest.skip(f"{PG_URL_ENV} is not set: run the suite under scripts/with-postgres.sh "
                    "(make test) to include PostgreSQL")
    return url


@asynccontextmanager
async def migrated_database(
    backend: str, tmp_path: Path, *, migrate: bool = True, **options: Any
) -> AsyncIterator[Database]:
    """A Database on an empty SQLite file or a fresh PostgreSQL schema, migrated to head
    (left empty with `migrate=False`). `options` go to `Database`."""
    if backend == "sqlite":
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'dialectic.db'}", **options)
        try:
            if migrate:
                await database.upgrade()
            yield database
        finally:
            await database.dispose()
        return
    url = _pg_url()
    schema = f"test_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(url, poolclass=NullPool)
    async with admin.begin() as connection:
        await connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    database = Database(url, connect_args={"server_settings": {"search_path": schema}}, **options)
    try:
        if migrate:
            await database.upgrade()
        yield database
    finally:
        await database.dispose()
        async with admin.begin() as connection:
            await connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        await admin.dispose()


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
