"""One statement text per batch on PostgreSQL (storage/arrays.py): a batch of rows written with
`write` (steps, audit links, starts) goes as one array per column, a list read with `among` as one
array, so every size is the same prepared statement; and what is stored and read is what the
multi-row INSERT and the expanding IN stored and read, field by field, on both databases."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Table, select, text
from sqlalchemy import event as sa_event

from engine.domain import StepRecord, Usage
from storage import audit, budget, steps
from storage.db import Database, ignoring_insert, write
from storage.journal import lookups_for
from storage.models import AuditEventRow
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)

_AT = datetime(2026, 11, 28, 10, 30, 15, 123456, tzinfo=UTC)


def _link(chain: str, seq: int, data: dict[str, Any] | None) -> dict[str, Any]:
    return {"chain": chain, "seq": seq, "debate_id": None if chain == "global" else chain,
            "kind": "step_finished", "actor": f"actor \u00e9 {seq}", "data": data,
            "at": _AT + timedelta(microseconds=seq), "prev_hash": "0" * 64,
            "hash": f"{seq:064d}"}


_DATA: list[dict[str, Any]] = [
    {}, {"text": "quotes \" and \\ and \n and \u2028 and \U0001f600"},
    {"nested": {"list": [1, 2.5, -3e-7, None, True, "x"], "empty": []}},
    {"big": 2**53 + 1, "float": 0.1 + 0.2, "unicode": "\u00fc\u00df\u4e2d"},
]


async def _stored_links(db: Database, chain: str) -> list[dict[str, Any]]:
    table: Table = AuditEventRow.__table__  # type: ignore[assignment]
    async with db.transaction(readonly=True) as session:
        rows = await session.execute(select(table).where(table.c.chain == chain)
                                     .order_by(table.c.seq))
    return [{k: v for k, v in row._mapping.items() if k != "id"} for row in rows]


async def test_a_batch_is_stored_field_by_field_as_given(db: Database) -> None:
    """Every column, JSON of every kind and microsecond datetimes included, reads back as
    written by `write`'s batch (column arrays on PostgreSQL), and as SQLAlchemy's own multi-row
    INSERT stores the same rows."""
    batch = [_link("arrays", i + 1, data) for i, data in enumerate(_DATA)]
    control = [{**row, "chain": "control"} for row in batch]
    async with db.transaction() as session:
        stmt = ignoring_insert(session, AuditEventRow, conflict=("chain", "seq"),
                               returning=("chain", "seq"))
        went = await write(session, stmt, batch)
        assert sorted(tuple(r) for r in went) == [("arrays", i + 1) for i in range(len(_DATA))]
        await session.execute(stmt, control)   # the multi-row INSERT, as before
    stored = await _stored_links(db, "arrays")
    assert stored == batch
    assert [{**row, "chain": "arrays"} for row in await _stored_links(db, "control")] == stored


async def test_a_batch_with_a_taken_key_returns_only_what_went_in(db: Database) -> None:
    async with db.transaction() as session:
        stmt = ignoring_insert(session, AuditEventRow, conflict=("chain", "seq"),
                               returning=("chain", "seq"))
        await write(session, stmt, [_link("c", 2, {"first": True})])
        went = await write(session, stmt, [_link("c", s, {"n": s}) for s in (1, 2, 3)])
        assert sorted(tuple(r) for r in went) == [("c", 1), ("c", 3)]
    assert [row["data"] for row in await _stored_links(db, "c")] == [
        {"n": 1}, {"first": True}, {"n": 3}]


async def _prepared(db: Database, like: str, sizes: range, run: Any) -> int:
    """How many new statements matching `like` one connection prepared while `run` wrote or
    read batches of each size."""
    count = text("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE :like")
    async with db.transaction() as session:
        before = int(await session.scalar(count, {"like": like}) or 0)
        for size in sizes:
            await run(session, size)
        return int(await session.scalar(count, {"like": like}) or 0) - before


@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
async def test_every_batch_size_is_one_prepared_statement(db: Database) -> None:
    debate = await add_debate(db)

    async def put_steps(session: Any, size: int) -> None:
        records = [(debate.id, _step(f"k{size}/{i}")) for i in range(size)]
        stored, _ = await steps.put_steps(session, records, False)
        assert stored == [record for _, record in records]

    async def links(session: Any, size: int) -> None:
        await write(session, ignoring_insert(session, AuditEventRow, conflict=("chain", "seq"),
                                             returning=("chain", "seq")),
                    [_link(f"size{size}", i + 1, {"i": i}) for i in range(size)])

    async def read_steps(session: Any, size: int) -> None:
        ids = [debate.id, *(f"none{i}" for i in range(size - 1))]
        found, _ = await steps.list_steps_many(session, ids, False)
        assert len(found[0]) == 2 + 3 + 4 + 5 + 6 + 7 and found[1:] == [[]] * (size - 1)

    async def sums(session: Any, size: int) -> None:
        assert await budget._ledgers(session, {f"d{i}" for i in range(size)}) is not None

    assert await _prepared(db, "INSERT INTO steps%", range(2, 8), put_steps) <= 1
    assert await _prepared(db, "INSERT INTO audit_events%", range(2, 8), links) <= 1
    assert await _prepared(db, "SELECT steps.%", range(1, 7), read_steps) <= 1
    assert await _prepared(db, "SELECT budget_ledger.%", range(1, 7), sums) <= 1


async def test_a_list_read_finds_exactly_its_members(db: Database) -> None:
    """`among` on both databases: each debate's steps, none of another's, none for an id that
    only starts like a stored one (an unsized array: nothing is cut to the column's length)."""
    first, second = await add_debate(db), await add_debate(db)
    odd = _step("c").model_copy(update={
        "cost_usd": 0.1 + 0.2, "latency_s": 1e-7, "rehearsal": True, "status": "degraded",
        "usage": Usage(prompt_tokens=2**31 - 1, completion_tokens=0, cached_tokens=7,
                       reasoning_tokens=3), "output": None, "error": "\u00e9\n\"x\""})
    written = [(first.id, _step("a")), (second.id, _step("b")), (first.id, odd)]
    async with db.transaction() as session:
        await steps.put_steps(session, written, False)
    async with db.transaction(readonly=True) as session:
        found, _ = await steps.list_steps_many(
            session, [second.id, first.id + "x" * 100, first.id], False)
    assert found == [[written[1][1]], [], [written[0][1], odd]]   # every field as written


def _step(key: str) -> StepRecord:
    return StepRecord(key=key, role="pro", phase="open", model="m", output={"k": key},
                      prompt_hash="h", usage=Usage(prompt_tokens=1, completion_tokens=2),
                      cost_usd=0.5, latency_s=0.25, created_at=_AT)


async def test_appends_with_known_heads_stay_contiguous_under_races(db: Database) -> None:
    """A link appended with its chain's head known takes the chain's lock in its INSERT on
    PostgreSQL: racing appenders (some with a known head, some reading it) still leave one
    contiguous, verifiable chain."""
    audit.DbEventSink(db)   # this process remembers the heads it appends

    async def one(i: int) -> None:
        async with db.transaction() as session:
            await audit.append(session, debate_id="raced", kind="note", actor=f"w{i}",
                               data={"i": i})
            if i % 3 == 0:   # a second link in the same transaction: its lock is held
                await audit.append(session, debate_id="raced", kind="again", actor=f"w{i}")

    for round_ in range(3):
        await asyncio.gather(*(one(10 * round_ + i) for i in range(10)))
    async with db.transaction(readonly=True) as session:
        chain = await audit.events(session, "raced")
        report = await audit.verify(session, "raced")
    assert [e.seq for e in chain] == list(range(1, 30 + 10 + 1))   # 30 notes, 10 agains
    assert report.ok, report.first_broken


async def test_an_append_with_a_known_head_is_one_statement(db: Database) -> None:
    audit.DbEventSink(db)
    async with db.transaction() as session:
        await audit.append(session, debate_id="one", kind="first", actor="t")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    sa_event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with db.transaction() as session:
            await audit.append(session, debate_id="one", kind="second", actor="t")
            await audit.append(session, debate_id="one", kind="third", actor="t")
    finally:
        sa_event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    links = [s for s in statements if "audit_events" in s or "advisory" in s]
    assert len(links) == 2   # the head known: no lock of its own, no read of the head
    assert ("pg_advisory_xact_lock" in links[0]) is (db.dialect == "postgresql")
    async with db.transaction(readonly=True) as session:
        assert (await audit.verify(session, "one")).ok


async def test_batched_lookups_run_without_a_transaction_block_on_postgresql(db: Database
                                                                             ) -> None:
    """`lookups_for`: on PostgreSQL each read is its own statement in autocommit (no BEGIN READ
    ONLY and COMMIT around it: two round trips fewer); on SQLite a read-only transaction."""
    async def setting(session: Any, asks: list[None], fresh: bool) -> tuple[list[Any], None]:
        if db.dialect != "postgresql":
            return [session.in_transaction()] * len(asks), None
        read_only = await session.scalar(text("SELECT current_setting('transaction_read_only')"))
        return [read_only] * len(asks), None

    found = await asyncio.gather(*(lookups_for(db).read(setting, None) for _ in range(3)))
    assert found == (["off"] * 3 if db.dialect == "postgresql" else [True] * 3)
    debate = await add_debate(db)
    async with db.transaction() as session:
        await steps.put_steps(session, [(debate.id, _step("k"))], False)
    assert [s.key for s in await lookups_for(db).read(steps.list_steps_many, debate.id)] == ["k"]
