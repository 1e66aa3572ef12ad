"""The listings a person waits on read an index, not the whole table: `GET /api/debates`, the
console's home, `dialectic list` and App Home ask for the newest debates, and the metrics for
one day's; without `ix_debates_created_at_id` (migration 0022) SQLite scanned and sorted every
debate (0.4-0.5 s a page at 50,000 debates; docs/benchmarks.md). Checked with SQLite's own
query plan for the statements the storage functions really send."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from storage import debates
from storage.db import Database
from storage.tenancy import Workspace
from tests.support.storage_fixtures import add_debate


async def _plans(database: Database, call: Any) -> list[str]:
    """The query plan of every SELECT on debates that `call` sends."""
    sent: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
             _many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM debates" in statement:
            sent.append((statement, parameters))

    sync_engine = database.engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", seen)
    try:
        async with database.transaction(readonly=True) as session:
            await call(session)
    finally:
        event.remove(sync_engine, "before_cursor_execute", seen)
    plans = []
    async with database.engine.connect() as connection:
        for statement, parameters in sent:
            rows = await connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            plans.append(" / ".join(str(row[-1]) for row in rows))
    assert plans, "no SELECT on debates was sent"
    return plans


async def test_the_newest_debates_are_read_from_the_index(sqlite_db: Database) -> None:
    for n in range(3):
        await add_debate(sqlite_db, f"Topic {n}", seconds_ago=n)
    listings = [
        lambda s: debates.list_recent(s, limit=50),
        lambda s: debates.list_recent(s, limit=50, requested_by="U123"),
        lambda s: debates.list_recent(s, limit=50, workspace=Workspace(team_id="T1")),
    ]
    for listing in listings:
        for plan in await _plans(sqlite_db, listing):
            assert "USING INDEX ix_debates_created_at_id" in plan, plan
            assert "TEMP B-TREE" not in plan, f"sorted in memory: {plan}"


async def test_the_index_is_the_migrations_own(sqlite_db: Database) -> None:
    async with sqlite_db.engine.connect() as connection:
        found = (await connection.execute(text(
            "SELECT sql FROM sqlite_master WHERE name = 'ix_debates_created_at_id'"))).scalar()
    assert found is not None and "created_at" in found and "id" in found
