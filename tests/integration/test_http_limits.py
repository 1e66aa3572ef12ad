"""Limits a hostile or careless client meets over real HTTP (issue 22): resume positions bounded
before they reach SQL, a cap on live event streams per client and in all (429 with Retry-After,
`/healthz` unharmed), heartbeats and a lifetime on every stream, and read deadlines that close
connections sending nothing, trickling headers or trickling a body. Limits are set as users set
them: DIALECTIC_* environment variables."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import aiohttp
import pytest

from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

TOPIC = "Should we move billing to PostgreSQL?"
#: a bound on how long a test waits for what must happen; reaching it is the failure
PATIENCE = 20.0


async def queued_debate(s: aiohttp.ClientSession, base: str) -> str:
    """A debate that stays queued (the server runs no worker): its stream stays live."""
    status, body = await call(s, "POST", f"{base}/api/debates", json={"topic": TOPIC,
                                                                     "mode": "simple"})
    assert status == 202, body
    return str(body["id"])


@pytest.mark.parametrize(("query", "headers"), [
    ("?after=9223372036854775808", {}),
    ("?after=2147483648", {}),
    ("?after=" + "9" * 40, {}),
    ("?after=-1", {}),
    ("", {"Last-Event-ID": "9223372036854775808"}),
    ("", {"Last-Event-ID": "2147483648"}),
    ("", {"Last-Event-ID": "-5"}),
    ("?after=3", {"Last-Event-ID": "1e400"}),
], ids=range(8))
async def test_resume_positions_out_of_range_are_a_400_before_any_sql(
        db: Database, query: str, headers: dict[str, str]) -> None:
    async with served(db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        debate_id = await queued_debate(s, base)
        async with s.get(f"{base}/api/debates/{debate_id}/events{query}",
                         headers=headers) as resp:
            body = await resp.json()
        assert resp.status == 400, body
        assert "\n" not in body["error"] and ("after" in body["error"]
                                              or "Last-Event-ID" in body["error"])
        async with s.get(f"{base}/api/debates/{debate_id}/events?after=2147483647") as edge:
            assert edge.status == 200  # the largest position is still a position


@asynccontextmanager
async def stream(s: aiohttp.ClientSession, url: str) -> AsyncIterator[aiohttp.ClientResponse]:
    """An event stream held open; for a 200, its first line has arrived (the slot is taken)."""
    async with s.get(url) as resp:
        if resp.status == 200:
            assert (await resp.content.readline()).startswith(b"retry:")
        yield resp


async def test_streams_past_the_per_client_limit_get_429_and_healthz_stays_up(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALECTIC_SSE_PER_CLIENT", "3")
    monkeypatch.setenv("DIALECTIC_SSE_GLOBAL", "50")
    settings = rehearsal_settings()
    async with served(sqlite_db, settings, workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s, AsyncExitStack() as held:
        url = f"{base}/api/debates/{await queued_debate(s, base)}/events"
        for _ in range(3):
            assert (await held.enter_async_context(stream(s, url))).status == 200
        async with s.get(url) as refused:
            assert refused.status == 429
            assert int(refused.headers["Retry-After"]) > 0
            assert "3 live streams" in (await refused.json())["error"]
        status, _ = await call(s, "GET", f"{base}/healthz")
        assert status == 200
        await held.aclose()  # closing streams frees their slots
        async with stream(s, url) as again:
            assert again.status == 200


async def test_streams_past_the_global_limit_get_429(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALECTIC_SSE_PER_CLIENT", "100")
    monkeypatch.setenv("DIALECTIC_SSE_GLOBAL", "4")
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s, AsyncExitStack() as held:
        url = f"{base}/api/debates/{await queued_debate(s, base)}/events"
        for _ in range(4):
            assert (await held.enter_async_context(stream(s, url))).status == 200
        async with s.get(url) as refused:
            assert refused.status == 429 and "Retry-After" in refused.headers
            assert "limit of 4 live streams" in (await refused.json())["error"]
        status, _ = await call(s, "GET", f"{base}/healthz")
        assert status == 200


async def test_a_quiet_stream_sends_heartbeats_and_ends_at_its_lifetime(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALECTIC_SSE_HEARTBEAT_SECONDS", "0.25")
    monkeypatch.setenv("DIALECTIC_SSE_MAX_SECONDS", "1.5")
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        url = f"{base}/api/debates/{await queued_debate(s, base)}/events"
        async with asyncio.timeout(PATIENCE), s.get(url) as resp:
            text = (await resp.read()).decode()  # returns only when the server ends it
    assert ": keep-alive" in text
    assert "id: 1\n" in text            # the chain so far, then silence
    assert "event: settled" not in text  # not settled: the browser reconnects and resumes


async def _closed(reader: asyncio.StreamReader) -> bytes:
    """All the server sends until it closes the connection."""
    async with asyncio.timeout(PATIENCE):
        return await reader.read()


async def test_read_deadlines_close_silent_trickling_and_idle_connections(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALECTIC_IDLE_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("DIALECTIC_BODY_TIMEOUT_SECONDS", "1")
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        port = int(base.rstrip("/").rsplit(":", 1)[1])
        opened: list[asyncio.StreamWriter] = []

        async def connection() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            opened.append(writer)
            return reader, writer

        try:
            silent = await connection()
            partial = await connection()
            partial[1].write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            idle = await connection()
            idle[1].write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            slow = await connection()
            slow[1].write(b"POST /api/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
            trickle = asyncio.create_task(_trickle(slow[1]))
            status, health = await call(s, "GET", f"{base}/healthz")  # responsive meanwhile
            assert status == 200, health   # once 503 in a run at load 4-5: why, if it recurs
            assert await _closed(silent[0]) == b""
            assert await _closed(partial[0]) == b""
            assert (await _closed(idle[0])).startswith(b"HTTP/1.1 200")  # answered, then closed
            answer = await _closed(slow[0])
            trickle.cancel()
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"did not arrive within 1 s" in answer
            status, health = await call(s, "GET", f"{base}/healthz")
            assert status == 200, health
        finally:   # a failure above must not leave them for the next test's loop to find
            for writer in opened:
                writer.close()


async def _trickle(writer: asyncio.StreamWriter) -> None:
    """One byte of body at a time, slowly, as a slowloris would."""
    while not writer.is_closing():
        await asyncio.sleep(0.2)
        writer.write(b" ")
