"""Session generations: each sign-out moves a person's on by one, concurrent ones included, on
SQLite and PostgreSQL; everyone else's stays where it was."""

from __future__ import annotations

import asyncio

from engine.domain import utcnow
from storage import sessions
from storage.db import Database
from tests.support import storage_fixtures as fx

db = fx.db  # fixture (until conftest.py imports it)


async def test_each_sign_out_moves_the_generation_on(db: Database) -> None:
    async with db.transaction(readonly=True) as session:
        assert await sessions.generation(session, "UREV") == 0
    async with db.transaction() as session:
        assert await sessions.advance(session, "UREV", now=utcnow()) == 1
        assert await sessions.advance(session, "", now=utcnow()) == 1   # the operator
    async with db.transaction() as session:
        assert await sessions.advance(session, "UREV", now=utcnow()) == 2
    async with db.transaction(readonly=True) as session:
        assert [await sessions.generation(session, u) for u in ("UREV", "", "UOTHER")] == [
            2, 1, 0]


async def test_concurrent_sign_outs_each_count(db: Database) -> None:
    async def sign_out() -> int:
        async with db.transaction() as session:
            return await sessions.advance(session, "UREV", now=utcnow())

    assert sorted(await asyncio.gather(*(sign_out() for _ in range(5)))) == [1, 2, 3, 4, 5]
