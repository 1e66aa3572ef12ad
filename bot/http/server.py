"""The HTTP server (REST API, web console, Slack) and the worker-only process.

`dialectic serve` runs the HTTP server plus workers in one process; `dialectic worker` runs
workers only. Both stop gracefully on SIGTERM: stop claiming, let running steps finish for a
grace period, release the rest for another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator

from aiohttp import web

from bot.http import api, console
from bot.service.runtime import Runtime, build_runtime
from bot.service.worker import Worker
from engine.errors import ConfigurationError
from engine.settings import Settings

log = logging.getLogger("dialectic.server")
MAX_BODY = 256 * 1024
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def build_app(rt: Runtime, *, workers: int | None = None,
              scheduler: bool = True) -> web.Application:
    """The aiohttp application: API, console, Slack (when configured), workers, scheduler."""
    app = _slack_or_plain_app(rt)
    app[api.RUNTIME] = rt
    app.middlewares.extend([api.error_middleware, api.auth_middleware])
    api.add_routes(app)
    console.add_routes(app)
    if workers != 0:
        app.cleanup_ctx.append(_workers_ctx(rt, workers))
    if scheduler:
        app.cleanup_ctx.append(_scheduler_ctx(rt))
    return app


def _slack_or_plain_app(rt: Runtime) -> web.Application:
    if not rt.settings.slack_enabled:
        log.warning("Slack is off: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (HTTP) or "
                    "SLACK_APP_TOKEN (Socket Mode) to enable it; the API and console still run")
        return web.Application(client_max_size=MAX_BODY)
    from bot.slack import attach_slack

    return attach_slack(rt, web.Application(client_max_size=MAX_BODY))


def _workers_ctx(rt: Runtime, count: int | None):  # type: ignore[no-untyped-def]
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        stop = asyncio.Event()
        worker = Worker(rt.service, concurrency=count)
        rt.workers.append(worker)
        task = asyncio.create_task(worker.run(stop), name="worker")
        yield
        stop.set()
        await task
        rt.workers.remove(worker)

    return ctx


def _scheduler_ctx(rt: Runtime):  # type: ignore[no-untyped-def]
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        from bot.scheduling.scheduler import start_scheduler

        scheduler = await start_scheduler(rt)
        yield
        if scheduler is not None:
            scheduler.shutdown(wait=False)

    return ctx


def check_exposure(settings: Settings, host: str) -> None:
    if settings.api_token is None and host not in LOOPBACK:
        raise ConfigurationError(
            f"refusing to listen on {host} without DIALECTIC_API_TOKEN: set a token, or listen "
            "on 127.0.0.1")


async def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    host = host or settings.host
    port = port if port is not None else settings.port
    check_exposure(settings, host)
    rt = await build_runtime(settings)
    app = build_app(rt)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("serving on http://%s:%d (console /, API /api, Slack /slack/events)", host, port)
    try:
        await _until_signalled()
    finally:
        await runner.cleanup()
        await rt.close()


async def work(settings: Settings, *, concurrency: int | None = None) -> None:
    rt = await build_runtime(settings)
    stop = asyncio.Event()
    worker = Worker(rt.service, concurrency=concurrency)
    rt.workers.append(worker)
    if settings.slack_enabled:
        from bot.slack import attach_notifier

        attach_notifier(rt)
    from bot.scheduling.scheduler import start_scheduler

    scheduler = await start_scheduler(rt)  # slot claims keep replicas from firing twice
    if settings.metrics_port:
        from prometheus_client import start_http_server

        from bot.service.telemetry import REGISTRY

        start_http_server(settings.metrics_port, addr="127.0.0.1", registry=REGISTRY)
    task = asyncio.create_task(worker.run(stop))
    try:
        await _until_signalled(task)
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        stop.set()
        await task
        await rt.close()


async def _until_signalled(task: asyncio.Task[None] | None = None) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    waiters = [asyncio.ensure_future(stop.wait())]
    if task is not None:
        waiters.append(task)  # type: ignore[arg-type]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    log.info("shutting down")
