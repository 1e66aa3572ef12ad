"""Trace headers on the API, over raw HTTP to the real aiohttp server (bot/http/tracing.py,
bot/http/hardening.py): W3C Trace Context's rules, and a malformed header is a 400 with one
warning line, never an ERROR with a traceback, whether aiohttp's parser or ours refuses it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from yarl import URL

from bot.service.settings import ServiceSettings
from bot.service.tracing import reset_tracing, setup_tracing
from storage.db import Database
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "trace-test-token"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
GOOD = f"00-{TRACE}-{PARENT}-01"

REFUSED: list[tuple[bytes, str]] = [
    (b"tracestate: a=" + b"x" * 8_190, "Got more than 8190 bytes"),   # aiohttp's parser
    (f"traceparent: 00-{TRACE}-{PARENT}-\x01\x02".encode(), "Invalid header value char"),
    (f"traceparent: {GOOD}-extra".encode(), "version 00 has exactly 4 fields"),
    (f"traceparent: {GOOD}-".encode(), "version 00 has exactly 4 fields"),
    (f"traceparent: ff-{TRACE}-{PARENT}-01".encode(), "version ff is invalid"),
    (f"traceparent: 00-{TRACE.upper()}-{PARENT}-01".encode(), "lowercase hex"),
    (f"traceparent: 00-{'0' * 32}-{PARENT}-01".encode(), "all zeros"),
    (f"traceparent: 00-{TRACE}-{'0' * 16}-01".encode(), "all zeros"),
    (f"traceparent: 01-{TRACE}-{PARENT}-01x".encode(), "lowercase hex"),
    (f"traceparent: 00-{TRACE}-{PARENT}".encode(), "lowercase hex"),
    (f"traceparent: {GOOD}\r\ntraceparent: {GOOD}".encode(), "one traceparent header"),
    (f"traceparent: {GOOD}\r\ntracestate: ".encode()
     + b",".join(b"k%d=v" % i for i in range(33)), "33 members; at most 32"),
    (b"tracestate: a=" + b"x" * 600, "at most 512 are taken"),
    (b"tracestate: a=1,a=2", "names a key twice"),
    (b"tracestate: A=1", "key=value"),
    (b"tracestate: a=1 =2", "key=value"),
]
ACCEPTED: list[bytes] = [
    f"traceparent: {GOOD}".encode(),
    f"traceparent: cc-{TRACE}-{PARENT}-01-what-a-later-version-adds".encode(),
    f"traceparent: 01-{TRACE}-{PARENT}-03".encode(),   # sampled, and a flag yet unknown
    f"traceparent: {GOOD}\r\ntracestate: ".encode()
    + b",".join(b"k%d=v" % i for i in range(32)) + b", ,,\t",
    f"traceparent: {GOOD}\r\ntracestate: rojo=00f067aa0ba902b7\r\ntracestate: congo=t61rc "
    f"Wk@gM".encode(),
    b"tracestate: tenant@system=x, a-b_c*d/e=  leading spaces kept",
]


async def _raw(base: str, header: bytes) -> tuple[int, bytes]:
    """One GET /api/debates with `header` as sent, byte for byte; (status, body)."""
    url = URL(base)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(b"GET /api/debates HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" + header
                     + b"\r\n\r\n")
        await writer.drain()
        status = await reader.readline()
        body = await reader.read()
    finally:
        writer.close()
    return int(status.split()[1]), body


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    caught = InMemorySpanExporter()
    setup_tracing(ServiceSettings(), exporter=caught)
    yield caught
    reset_tracing()


async def test_malformed_trace_headers_are_a_400_and_one_warning_line(
        sqlite_db: Database, caplog: pytest.LogCaptureFixture) -> None:
    async with served(sqlite_db, rehearsal_settings(api_token=TOKEN)) as (base, _, _):
        for header, says in REFUSED:
            caplog.clear()
            with caplog.at_level(logging.INFO):
                status, body = await _raw(base, header)
                await asyncio.sleep(0.05)   # aiohttp logs after it answered
            assert status == 400, (header[:80], body)
            warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert len(warned) == 1, (header[:80], [r.getMessage() for r in warned])
            [line] = warned
            assert line.levelno == logging.WARNING and line.exc_info is None
            assert says in line.getMessage() and "\n" not in line.getMessage(), line.msg
            assert "Traceback" not in caplog.text and "xxxxxxxx" not in caplog.text


async def test_well_formed_trace_headers_are_taken_and_continue_the_trace(
        sqlite_db: Database, exporter: InMemorySpanExporter,
        caplog: pytest.LogCaptureFixture) -> None:
    async with served(sqlite_db, rehearsal_settings(api_token=TOKEN)) as (base, _, _):
        for header in ACCEPTED:
            exporter.clear()
            status, body = await _raw(base, header)
            assert status == 200, (header, body)
            [span] = [s for s in exporter.get_finished_spans()
                      if s.name == "GET /api/debates"]
            assert span.context is not None
            continued = span.parent is not None and f"{span.context.trace_id:032x}" == TRACE
            assert continued == header.startswith(b"traceparent"), header
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
