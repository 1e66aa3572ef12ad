"""The HTTP surface when things go wrong around it: a database that refuses writes answers 503
in JSON (never a plain-text 500) and `/healthz` says why; an event-stream client that leaves is
not an error, and its stream stops polling at once; a stream whose database goes away ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiohttp import web
from sqlalchemy import text

from bot.assembly import Assembly, web_app
from bot.scheduling.scheduler import Scheduler
from bot.service.telemetry import REGISTRY
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings, runtime
from tests.support.storage_fixtures import add_debate

TOPIC = "Should we move billing to PostgreSQL?"


def _open_streams() -> float:
    return REGISTRY.get_sample_value("dialectic_event_streams_open") or 0.0


@asynccontextmanager
async def _without_workers(db: Database) -> AsyncIterator[str]:
    """The served app with no worker (a queued debate stays queued, its stream stays open),
    run as `dialectic serve` runs it: aiohttp's AppRunner does not cancel a handler whose client
    left (the test server would, and hide what production does)."""
    settings = rehearsal_settings()
    rt = runtime(db, settings)
    app = web_app(Assembly(rt, Scheduler(rt, settings.scheduling), None), settings, workers=0,
                  scheduler=False)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_a_read_only_database_is_a_503_in_json_and_an_unhealthy_healthz(
        sqlite_db: Database) -> None:
    """SQLite opened with `mode=ro` refuses every write, whoever the process runs as (root
    ignores file permissions; SQLite does not ignore its own read-only mode)."""
    await add_debate(sqlite_db, TOPIC)
    read_only = Database(f"sqlite+aiosqlite:///file:{sqlite_db.url.database}?mode=ro&uri=true")
    try:
        async with served(read_only, rehearsal_settings()) as (base, _, _), \
                aiohttp.ClientSession() as s:
            async with s.post(f"{base}/api/debates", json={"topic": TOPIC}) as resp:
                assert resp.status == 503
                assert resp.content_type == "application/json"
                assert resp.headers["Retry-After"].isdigit()
                reply = await resp.json()
            assert "readonly database" in reply["error"]
            assert "check DATABASE_URL" in reply["error"]
            status, health = await call(s, "GET", f"{base}/healthz")
            assert status == 503 and health["ok"] is False
            assert any("readonly database" in p for p in health["problems"])
            status, listing = await call(s, "GET", f"{base}/api/debates")
            assert status == 200 and [d["topic"] for d in listing["debates"]] == [TOPIC]
    finally:
        await read_only.dispose()


async def test_healthz_lists_no_problems_when_healthy(sqlite_db: Database) -> None:
    async with served(sqlite_db, rehearsal_settings()) as (base, _, _), \
            aiohttp.ClientSession() as s:
        status, health = await call(s, "GET", f"{base}/healthz")
    assert status == 200 and health["ok"] is True and health["problems"] == []
    assert health["workers"] == rehearsal_settings().service.worker_concurrency


async def test_an_event_stream_client_that_leaves_is_not_an_error(
        sqlite_db: Database, caplog: pytest.LogCaptureFixture) -> None:
    record = await add_debate(sqlite_db, TOPIC)
    caplog.set_level(logging.DEBUG, logger="dialectic.http")
    before = _open_streams()
    async with _without_workers(sqlite_db) as base:
        async with aiohttp.ClientSession() as s, \
                s.get(f"{base}/api/debates/{record.id}/events") as resp:
            assert resp.status == 200
            assert await resp.content.readline() == b"retry: 2000\n"
            async with asyncio.timeout(5):
                while _open_streams() <= before:
                    await asyncio.sleep(0.02)
        # the client has gone: the handler notices before its next poll, not at a keep-alive
        async with asyncio.timeout(5):
            while _open_streams() > before:
                await asyncio.sleep(0.02)
    assert any("the client went away" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_an_event_stream_ends_quietly_when_the_database_goes_away(
        sqlite_db: Database, caplog: pytest.LogCaptureFixture) -> None:
    """The stream ends (its client reconnects with Last-Event-ID); no 500, no traceback."""
    record = await add_debate(sqlite_db, TOPIC)
    caplog.set_level(logging.WARNING)
    async with _without_workers(sqlite_db) as base, aiohttp.ClientSession() as s, \
            s.get(f"{base}/api/debates/{record.id}/events") as resp:
        assert resp.status == 200
        assert await resp.content.readline() == b"retry: 2000\n"
        async with sqlite_db.transaction() as session:
            await session.execute(text("ALTER TABLE debates RENAME TO debates_away"))
        async with asyncio.timeout(10):
            rest = await resp.content.read()  # until the server ends the stream
        async with sqlite_db.transaction() as session:
            await session.execute(text("ALTER TABLE debates_away RENAME TO debates"))
    assert b"event: settled" not in rest
    assert any("ending the stream" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
