"""INSERT ... ON CONFLICT statements built once (storage/db.py): rows passed as parameters, keyed
by column name, write and skip exactly as the statements with embedded values did, on SQLite
and PostgreSQL; and `write` flushes what the session has pending first, as an ORM statement's
autoflush did."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from engine.domain import utcnow
from storage.db import Database, ignoring_insert, upserting, write
from storage.models import JudgeCacheRow
from tests.support import storage_fixtures as fx

db = fx.db  # fixture (until conftest.py imports it)


async def _stored(db: Database) -> dict[str, object]:
    async with db.transaction(readonly=True) as session:
        rows = await session.execute(select(JudgeCacheRow.key, JudgeCacheRow.value))
        return {key: value for key, value in rows}


async def test_an_upsert_writes_then_replaces_only_its_update_columns(db: Database) -> None:
    later = utcnow() + timedelta(hours=1)
    async with db.transaction() as session:
        only_value = upserting(session, JudgeCacheRow, conflict=("key",), update=("value",))
        assert only_value is upserting(session, JudgeCacheRow, conflict=("key",),
                                       update=("value",))   # built once
        await write(session, only_value, {"key": "a", "value": {"n": 1}, "expires_at": later})
        await write(session, only_value, [
            {"key": "a", "value": {"n": 2}, "expires_at": later + timedelta(days=9)},
            {"key": "b", "value": [1, "two"], "expires_at": later},
        ])
    assert await _stored(db) == {"a": {"n": 2}, "b": [1, "two"]}
    async with db.transaction(readonly=True) as session:
        kept = await session.scalar(select(JudgeCacheRow.expires_at)
                                    .where(JudgeCacheRow.key == "a"))
    assert kept == later   # not in `update`: the first row's value stands


async def test_an_ignoring_insert_skips_duplicates_and_returns_what_went_in(db: Database
                                                                            ) -> None:
    later = utcnow() + timedelta(hours=1)
    async with db.transaction() as session:
        stmt = ignoring_insert(session, JudgeCacheRow, conflict=("key",), returning=("key",))
        first = await write(session, stmt, {"key": "a", "value": 1, "expires_at": later})
        assert list(first.scalars()) == ["a"]
        many = await write(session, stmt, [
            {"key": "a", "value": 2, "expires_at": later},
            {"key": "b", "value": 3, "expires_at": later},
            {"key": "c", "value": 4, "expires_at": later},
        ])
        assert sorted(many.scalars()) == ["b", "c"]
        # the duplicate did not poison the transaction (PostgreSQL): it goes on and commits
        none = await write(session, stmt, {"key": "c", "value": 5, "expires_at": later})
        assert list(none.scalars()) == []
    assert await _stored(db) == {"a": 1, "b": 3, "c": 4}


async def test_write_flushes_what_the_session_has_pending_first(db: Database) -> None:
    later = utcnow() + timedelta(hours=1)
    async with db.transaction() as session:
        session.add(JudgeCacheRow(key="pending", value="added", expires_at=later))
        went = await write(session, ignoring_insert(session, JudgeCacheRow, conflict=("key",),
                                                    returning=("key",)),
                           {"key": "pending", "value": "inserted", "expires_at": later})
        assert list(went.scalars()) == []   # the added row was written first, and won
    assert await _stored(db) == {"pending": "added"}
