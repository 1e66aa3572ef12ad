"""The HTTP surface on a real aiohttp server on loopback (port 0), over a test database.

    async with served(db, settings) as (base_url, rt, app): ...
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.assembly import Assembly, web_app
from bot.http.hardening import runner_options
from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from bot.settings import Settings
from storage.db import Database
from tests.support.service_fixtures import runtime

__all__ = ["app_for", "call", "free_port", "served"]


def free_port() -> int:
    """A port free on loopback now (for a server whose public URL must be known in advance)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def app_for(rt: Runtime, settings: Settings, *, workers: int | None = None
            ) -> web.Application:
    """The application `dialectic serve` builds, without Slack and without the scheduler;
    `workers`: its worker slots (None: the settings', 0: none, a test runs its own)."""
    parts = Assembly(rt, Scheduler(rt, settings.scheduling), None)
    return web_app(parts, settings, workers=workers, scheduler=False)


@asynccontextmanager
async def served(db: Database, settings: Settings, *, workers: int | None = None,
                 port: int = 0) -> AsyncIterator[tuple[str, Runtime, web.Application]]:
    """(base URL, runtime, app) of a running server over `db` (on `port`, 0: any free one);
    closed on exit."""
    rt = runtime(db, settings)
    app = app_for(rt, settings, workers=workers)
    server = TestServer(app, host="127.0.0.1", port=port)
    await server.start_server(**runner_options(settings.http))
    try:
        yield str(server.make_url("")), rt, app
    finally:
        await server.close()


async def call(session: aiohttp.ClientSession, method: str, url: str, **kw: Any
               ) -> tuple[int, Any]:
    """(status, JSON body) of one request."""
    async with session.request(method, url, **kw) as resp:
        return resp.status, await resp.json()
