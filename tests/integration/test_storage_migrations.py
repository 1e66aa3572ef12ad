"""Migrations from empty, models == migrations, and the connection set-up of each database."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Float,
    Integer,
    String,
    insert,
    inspect,
    select,
    table,
    text,
)
from sqlalchemy.exc import DBAPIError, StatementError

from engine.domain import Usage
from storage import debates, steps
from storage.db import Database, alembic_config
from storage.models import DebateRow
from storage.records import DebateStatus
from storage.schema import METADATA
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import BACKENDS, add_debate, migrated_database

db, sqlite_db, pg_db = fx.db, fx.sqlite_db, fx.pg_db  # fixtures (until conftest imports them)

TABLES = {
    "debates", "steps", "audit_events", "reviews", "budget_days", "budget_ledger", "evidence",
    "judge_cache", "scheduled_runs", "slack_dedupe", "schedules_state", "panels",
    "applied_thresholds",
}


def _schema_diff(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, METADATA))


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def test_upgrade_from_empty_creates_every_table_at_head(db: Database) -> None:
    async with db.engine.connect() as connection:
        tables = await connection.run_sync(_tables)
        version = (await connection.execute(text("SELECT version_num FROM alembic_version"))).all()
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert TABLES <= tables
    assert version == [(head,)]


async def test_models_match_the_migrated_schema(db: Database) -> None:
    async with db.engine.connect() as connection:
        assert await connection.run_sync(_schema_diff) == []


async def test_upgrade_twice_is_a_no_op_and_keeps_data(db: Database) -> None:
    record = await add_debate(db)
    await db.upgrade()
    async with db.transaction() as session:
        assert (await debates.get(session, record.id)).id == record.id


@pytest.mark.parametrize("backend", BACKENDS)
async def test_upgrade_works_from_any_working_directory(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    async with migrated_database(backend, tmp_path, migrate=False) as database:
        await database.upgrade()  # here, not a copy of the template migrated elsewhere
        async with database.engine.connect() as connection:
            assert TABLES <= await connection.run_sync(_tables)


async def test_sqlite_creates_its_directory_and_runs_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "dialectic.db"
    database = Database(f"sqlite+aiosqlite:///{path}")
    try:
        await database.upgrade()
        assert database.dialect == "sqlite"
        async with database.transaction() as session:
            journal = (await session.execute(text("PRAGMA journal_mode"))).scalar_one()
            busy = (await session.execute(text("PRAGMA busy_timeout"))).scalar_one()
            keys = (await session.execute(text("PRAGMA foreign_keys"))).scalar_one()
        assert (journal, busy, keys) == ("wal", 5000, 1)
        assert path.exists()
    finally:
        await database.dispose()


async def test_sqlite_write_transactions_serialise_instead_of_failing(sqlite_db: Database) -> None:
    """Two writers that both read then write: with BEGIN IMMEDIATE the second waits for the
    first, so neither gets "database is locked" and no increment is lost."""
    record = await add_debate(sqlite_db)

    async def bump() -> None:
        async with sqlite_db.transaction() as session:
            row = await session.scalar(select(DebateRow).where(DebateRow.id == record.id))
            assert row is not None
            attempts = row.attempts
            await asyncio.sleep(0.01)  # hold the transaction open across an await
            row.attempts = attempts + 1

    await asyncio.gather(*(bump() for _ in range(8)))
    async with sqlite_db.transaction(readonly=True) as session:
        assert (await debates.get(session, record.id)).attempts == 8


async def test_datetimes_come_back_aware_and_utc(db: Database) -> None:
    local = datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    record = await add_debate(db)
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="test",
                                 started_at=local)
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
    assert stored.started_at == local
    assert stored.started_at is not None and stored.started_at.tzinfo is not None
    assert stored.started_at.utcoffset() == timedelta(0)
    assert stored.created_at.tzinfo is not None


async def test_naive_datetimes_are_refused(db: Database) -> None:
    record = await add_debate(db)
    with pytest.raises(StatementError, match="naive datetime"):
        async with db.transaction() as session:
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="test",
                                     started_at=datetime(2024, 1, 1))


async def test_downgrade_to_base_and_up_again(db: Database) -> None:
    from alembic import command

    def down(connection: Connection) -> None:
        command.downgrade(alembic_config(connection), "base")

    async with db.engine.begin() as connection:
        await connection.run_sync(down)
        assert not (TABLES & await connection.run_sync(_tables))
    await db.upgrade()
    async with db.engine.connect() as connection:
        assert TABLES <= await connection.run_sync(_tables)


def test_migrations_ship_with_the_package() -> None:
    import storage

    root = Path(storage.__file__).parent / "migrations"
    assert (root / "env.py").exists() and (root / "script.py.mako").exists()
    assert (root / "versions" / "0001_initial.py").exists()
    assert os.path.isabs(str(root))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_replicas_migrating_an_empty_database_together_take_turns(
    backend: str, tmp_path: Path
) -> None:
    async with migrated_database(backend, tmp_path, migrate=False) as database:
        async with database.engine.connect() as connection:
            assert not (TABLES & await connection.run_sync(_tables))
        await asyncio.gather(*(database.upgrade() for _ in range(3)))
        async with database.engine.connect() as connection:
            assert await connection.run_sync(_schema_diff) == []


async def test_a_readonly_transaction_refuses_writes_on_postgresql(pg_db: Database) -> None:
    """SQLite has no per-transaction read-only mode; the PostgreSQL runs catch a stray write."""
    record = await add_debate(pg_db)
    with pytest.raises(DBAPIError, match="read-only"):
        async with pg_db.transaction(readonly=True) as session:
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="t")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_0004_moves_replay_bookkeeping_out_of_the_request(backend: str,
                                                                tmp_path: Path) -> None:
    """A replay stored with `options.replay` (where a REST body could set it) reads back with
    its reused steps on the record; old options a request may no longer carry still read."""
    legacy = {"topic": "t", "mode": "panel", "options": {
        "replay": {"source": "p1", "reuse": ["panel/answer/0/a"]},
        "role_models": {"synthesizer": "gpt-4o"}, "policy": "p" * 30_000, "surprise": 1}}
    async with migrated_database(backend, tmp_path, migrate=False) as database:
        await database.upgrade("0003")
        for row_id, parent, request in (("p1", None, {"topic": "t", "mode": "panel"}),
                                        ("r1", "p1", legacy)):
            async with database.engine.begin() as connection:
                await connection.execute(sa_insert_debate(), {
                    "id": row_id, "topic": "t", "mode": "panel", "preset": "default",
                    "status": "completed", "request": request, "origin": {},
                    "requested_by": "u", "estimate_usd": 0.0, "reserved_usd": 0.0,
                    "cost_usd": 0.0, "error": "", "attempts": 0, "parent_id": parent,
                    "topic_key": "k", "created_at": datetime.now(UTC),
                    "updated_at": datetime.now(UTC)})
        await database.upgrade()
        async with database.transaction(readonly=True) as session:
            replay = await debates.get(session, "r1")
            plain = await debates.get(session, "p1")
    assert replay.reused_steps == ("panel/answer/0/a",) and plain.reused_steps == ()
    assert replay.request.options.role_models == {"synthesizer": "gpt-4o"}
    assert len(replay.request.options.policy) == 30_000  # it ran with it: kept as it was
    assert "replay" not in replay.request.options.model_dump()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_0009_steps_before_it_read_as_no_cached_or_reasoning_tokens(
        backend: str, tmp_path: Path) -> None:
    """A step stored before 0009 reads back with 0 cached and 0 reasoning tokens; downgrading
    drops the two columns and keeps the step."""
    from alembic import command

    async with migrated_database(backend, tmp_path, migrate=False) as database:
        await database.upgrade("0008")
        debate = await add_debate(database)
        async with database.engine.begin() as connection:
            await connection.execute(text(
                "INSERT INTO steps (debate_id, key, role, phase, model, status, prompt_hash, "
                "prompt_tokens, completion_tokens, cost_usd, latency_s, attempts, calls, error, "
                "rehearsal, created_at) VALUES (:d, 'simple/open/pro', 'pro', 'open', 'm', 'ok', "
                "'h', 100, 20, 0.5, 1.0, 1, 1, '', false, :now)"),
                {"d": debate.id, "now": datetime.now(UTC)})
        await database.upgrade()
        async with database.transaction(readonly=True) as session:
            (old,) = await steps.list_steps(session, debate.id)
        assert old.usage == Usage(prompt_tokens=100, completion_tokens=20)

        def down(connection: Connection) -> list[str]:
            command.downgrade(alembic_config(connection), "0008")
            return [c["name"] for c in inspect(connection).get_columns("steps")]

        async with database.engine.begin() as connection:
            columns = await connection.run_sync(down)
            kept = (await connection.execute(text("SELECT count(*) FROM steps"))).scalar()
        assert "cached_tokens" not in columns and "reasoning_tokens" not in columns
        assert "prompt_tokens" in columns and kept == 1


def sa_insert_debate() -> Any:
    """An INSERT into the debates table as revision 0003 left it."""
    columns = [Column(name, String) for name in (
        "id", "topic", "mode", "preset", "status", "requested_by", "error", "parent_id",
        "topic_key")]
    columns += [Column("request", JSON), Column("origin", JSON), Column("attempts", Integer)]
    columns += [Column(n, Float) for n in ("estimate_usd", "reserved_usd", "cost_usd")]
    columns += [Column(n, DateTime(timezone=True)) for n in ("created_at", "updated_at")]
    return insert(table("debates", *columns))
