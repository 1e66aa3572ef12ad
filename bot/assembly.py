"""The composition root's wiring: the one module that puts every layer together (bot/main.py, the
`dialectic` command, loads it only for the commands that need a whole process, so `dialectic
run`, `estimate`, `presets` and `--help` start without the database, Slack or the HTTP server).

Settings are loaded once (bot/settings.py) and each layer is handed its part: the runtime (the
service layer) gets the engine's, storage's and its own; the scheduler its schedules; Slack and
the HTTP server theirs. Three process shapes come out of it:

    serve    the HTTP server (API, console, Slack's events route) with workers and the scheduler
    worker   workers and the scheduler only (several of them share a PostgreSQL queue)
    hosted   a runtime with its scheduler and Slack posting for one CLI command's lifetime

All stop gracefully on SIGTERM: stop claiming, let running steps finish for a grace period,
release the rest for another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import start_http_server

from bot.http.auth import review_only
from bot.http.hardening import runner_options
from bot.http.server import build_app, check_exposure
from bot.http.state import MCP_GUARD
from bot.mcp import http as mcp_http
from bot.scheduling.scheduler import Scheduler
from bot.service import memory
from bot.service.housekeeping import housekeeping
from bot.service.runtime import Runtime, build_runtime
from bot.service.telemetry import REGISTRY
from bot.service.worker import Worker, WorkerStopped
from bot.settings import Settings
from bot.slack.delivery import SlackDispatcher
from bot.slack.housekeeping import forget_messages
from bot.slack.notifier import SlackNotifier
from bot.slack.publisher import SlackPublisher
from bot.slack.wiring import attach_notifier, attach_slack, close_notifier, delivering
from engine.errors import ConfigurationError
from engine.settings import EngineSettings
from storage.permissions import exposed_database

log = logging.getLogger("dialectic.server")
#: the Slack dispatcher of a served application (tests drain it)
DISPATCHER: web.AppKey[SlackDispatcher | None] = web.AppKey("dispatcher", SlackDispatcher)
Cleanup = Callable[[web.Application], AsyncIterator[None]]
SLACK_OFF = ("Slack is off: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (HTTP) or "
             "SLACK_APP_TOKEN (Socket Mode) for one workspace, or SLACK_CLIENT_ID, "
             "SLACK_CLIENT_SECRET, SLACK_SIGNING_SECRET (or SLACK_APP_TOKEN) and "
             "DIALECTIC_TOKEN_KEYS for \"Add to Slack\" (docs/slack-install.md); the API and "
             "console still run")


@dataclass(frozen=True, slots=True)
class Assembly:
    """One process's parts: the runtime, the scheduler, and Slack's notifier when configured."""

    rt: Runtime
    scheduler: Scheduler
    notifier: SlackNotifier | None


@contextlib.asynccontextmanager
async def assembled(settings: Settings) -> AsyncIterator[Assembly]:
    _say_where_the_database_is(settings)
    rt = await build_runtime(settings.engine, settings.service, settings.storage)
    # the price library loads its tables on first use: now, off the event loop, not inside the
    # first /debate's estimate
    await asyncio.to_thread(_warm_prices, settings.engine)
    notifier = attach_notifier(rt, settings.slack) if settings.slack.enabled else None
    # every process writes what its finished debates owe Slack, whichever process delivers it
    rt.service.outbox_targets = frozenset({"slack"}) if settings.slack.enabled else frozenset()
    publisher = SlackPublisher(notifier) if notifier is not None else None
    scheduler = Scheduler(rt, settings.scheduling, publisher=publisher)
    memory.started()  # the runtime is built: it lives as long as the process
    try:
        yield Assembly(rt, scheduler, notifier)
    finally:
        scheduler.shutdown()
        if notifier is not None:
            await close_notifier(notifier)
        await rt.close()


def _say_where_the_database_is(settings: Settings) -> None:
    """A new default database beside a `dialectic.db` in the current directory (where earlier
    versions kept it) would look like lost debates: say where each is."""
    storage = settings.storage
    path = storage.sqlite_file()
    stray = Path.cwd() / "dialectic.db"
    if storage.is_default_database and path is not None and not path.exists() and stray.exists():
        log.warning("creating a new database at %s (the default); %s exists here, where earlier "
                    "versions kept it: to keep its debates, stop and move it there, or set "
                    "DATABASE_URL=sqlite+aiosqlite:///%s", path, stray, stray)


def _warm_prices(engine: EngineSettings) -> None:
    for model in sorted(engine.configured_models()):
        engine.price_for("rehearsal" if engine.is_rehearsal else model)


@contextlib.asynccontextmanager
async def running_workers(rt: Runtime, concurrency: int | None
                          ) -> AsyncIterator[asyncio.Task[None]]:
    """A worker claiming and running debates until the block ends (then a graceful stop);
    yields the worker's task. It rides out database outages itself, so it ends early only on a
    bug: then `WorkerStopped` is raised and the command exits non-zero, for its supervisor
    (compose's `restart:`, systemd) to start a fresh process rather than limp on without one."""
    stop = asyncio.Event()
    worker = Worker(rt.service, concurrency=concurrency)
    rt.workers.append(worker)
    task = asyncio.create_task(worker.run(stop), name="worker")
    try:
        yield task
    finally:
        stop.set()
        try:
            await task
        except Exception as exc:  # the loop retries database errors itself: this is a bug
            log.error("worker %s stopped on an unexpected error", worker.worker_id, exc_info=exc)
            raise WorkerStopped(
                f"worker {worker.worker_id} stopped ({type(exc).__name__}: {exc}); exiting so "
                "that a supervisor starts a fresh process") from exc
        finally:
            rt.workers.remove(worker)


async def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    """Bind first; only then start the workers and the scheduler (a port in use must not leave
    a process that claims debates while it cannot serve)."""
    host = host or settings.http.host
    port = settings.http.port if port is None else port
    check_exposure(settings.service, host)
    for line in exposed_database(settings.storage):   # said once, at start
        log.warning(line)
    async with assembled(settings) as parts:
        if parts.notifier is None:
            log.warning(SLACK_OFF)
        runner = web.AppRunner(web_app(parts, settings, workers=0, scheduler=False),
                               handle_signals=False, **runner_options(settings.http))
        await runner.setup()
        try:
            await listen(runner, host, port)
            log.info("serving on http://%s:%d (console /, API /api, Slack /slack/events)", host,
                     port)
            async with chores(parts), running_workers(parts.rt, None) as task:
                await parts.scheduler.start()
                await until_signalled(task)
                parts.scheduler.shutdown()
        finally:
            await runner.cleanup()


async def listen(runner: web.AppRunner, host: str, port: int) -> None:
    """Start listening; a port in use (or an address we cannot bind) is a ConfigurationError
    that says which setting to change."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigurationError(
                f"port {port} on {host} is in use: stop what listens there, or choose another "
                "port with DIALECTIC_PORT (or --port)") from None
        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): check DIALECTIC_HOST and "
            "DIALECTIC_PORT") from None


def web_app(parts: Assembly, settings: Settings, *, workers: int | None = None,
            scheduler: bool = True) -> web.Application:
    """The served application: the API and console, MCP at /mcp, Slack's route when configured,
    and the process's workers (`workers` slots; None: the settings'; 0: none) and scheduler."""
    app = build_app(parts.rt, parts.scheduler, slack_enabled=parts.notifier is not None,
                    http=settings.http)
    # the SDK loads at the first /mcp request, if ever; a reviewer's sign-in gets reading tools
    guard = mcp_http.mount(app, parts.rt, read_only=review_only)
    if guard is not None:   # an identity provider signs MCP clients in (docs/mcp.md)
        app[MCP_GUARD] = guard
    if parts.notifier is not None:
        attach_slack(parts.rt, settings.slack, parts.notifier, parts.scheduler, app)
        # before the workers': cleanup runs in reverse, so deliveries outlive the workers
        app.cleanup_ctx.append(_delivery_ctx(parts.notifier))
    if workers != 0:
        app.cleanup_ctx.append(_workers_ctx(parts.rt, workers))
    if scheduler:
        app.cleanup_ctx.append(_scheduler_ctx(parts.scheduler))
    return app


def _workers_ctx(rt: Runtime, concurrency: int | None) -> Cleanup:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        async with running_workers(rt, concurrency):
            yield

    return ctx


def _delivery_ctx(notifier: SlackNotifier) -> Cleanup:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        async with delivering(notifier) as dispatcher:
            app[DISPATCHER] = dispatcher
            yield

    return ctx


def _scheduler_ctx(scheduler: Scheduler) -> Cleanup:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        await scheduler.start()
        yield
        scheduler.shutdown()

    return ctx


async def work(settings: Settings, *, concurrency: int | None = None) -> None:
    async with assembled(settings) as parts:
        await parts.scheduler.start()  # slot claims keep replicas from firing twice
        if settings.http.metrics_port:
            start_http_server(settings.http.metrics_port, addr="127.0.0.1", registry=REGISTRY)
        # the dispatcher outlives the workers: what a debate finishing in their grace period owes
        # Slack goes out too
        async with chores(parts), delivering(parts.notifier), \
                running_workers(parts.rt, concurrency) as task:
            await until_signalled(task)


def chores(parts: Assembly) -> contextlib.AbstractAsyncContextManager[None]:
    """Housekeeping for this process (Slack's part when Slack is on)."""
    return housekeeping(parts.rt, *([forget_messages] if parts.notifier is not None else []))


async def until_signalled(task: asyncio.Task[None] | None = None) -> None:
    """Until SIGTERM or SIGINT (or `task`, a worker's loop, ends on its own)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(stop.wait())}
    if task is not None:
        waiters.add(task)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    log.info("shutting down")


__all__ = ["Assembly", "assembled", "delivering", "running_workers", "serve", "until_signalled",
           "web_app", "work"]
