"""Property-based: no input to the REST API or the slash-command parser gets a server error.

Schemathesis generates requests from the service's own OpenAPI document (valid ones and ones
that break it: wrong types, missing fields, odd encodings) and sends them to a real server on
loopback; hypothesis feeds the `/debate` parser arbitrary text. Examples per operation are few,
so the suite stays quick on two cores; each run draws new ones.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.assembly import Assembly, web_app
from bot.http.openapi import document
from bot.http.server import ROUTES
from bot.scheduling.scheduler import Scheduler
from bot.slack.parsing import CommandError, parse_command
from storage.db import Database
from tests.support.service_fixtures import rehearsal_settings, runtime

EXAMPLES = 20
SCHEMA = schemathesis.openapi.from_dict(document(ROUTES))


class LoopbackServer:
    """The served application (no workers, no scheduler) on 127.0.0.1, in a thread of its own:
    schemathesis calls it the way any client would."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.url = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the loopback server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        db = Database(f"sqlite+aiosqlite:///{self.database}")
        await db.upgrade()
        app_settings = rehearsal_settings(daily_budget_usd=1000.0)
        rt = runtime(db, app_settings)
        parts = Assembly(rt, Scheduler(rt, app_settings.scheduling), None)
        runner = web.AppRunner(web_app(parts, app_settings, workers=0, scheduler=False),
                               access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()
        await rt.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackServer]:
    with LoopbackServer(tmp_path_factory.mktemp("api") / "dialectic.db") as running:
        yield running


@SCHEMA.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case: Any, server: LoopbackServer) -> None:
    response = case.call(base_url=server.url, timeout=30)
    assert response.status_code < 500, (case.method, case.path, response.text[:300])


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_the_slash_command_parser_only_ever_says_what_is_wrong(text: str) -> None:
    try:
        parse_command(text)
    except CommandError as exc:
        assert str(exc)


WORDS = st.sampled_from(["--mode", "--rounds", "--judges", "--preset", "status", "estimate",
                         "schedules", "pause", "simple", "3", "-1", "99", "\"", "'", "“",
                         "--", "—rounds", "\x00", "9" * 400, "é", "retry", "replay"])


@given(st.lists(WORDS, max_size=12).map(" ".join))
@settings(max_examples=300, deadline=None)
def test_the_parser_survives_flag_soup(text: str) -> None:
    try:
        parse_command(text)
    except CommandError as exc:
        assert str(exc)
