"""What a running process shares, built once from its settings: the database, the service and
the workers it runs, and its health. The composition root (bot/main.py) adds the surfaces
around it."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.service import telemetry
from bot.service.debates import DebateService
from bot.service.grants import IdentityProvider, WorkspaceDirectory
from bot.service.providers import describe, make_llm
from bot.service.reviews import ReviewDesk, Reviewers
from bot.service.settings import ServiceSettings
from bot.service.worker import Worker
from engine.settings import EngineSettings
from storage import heartbeats, outbox
from storage import metrics as metrics_repo
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.lessons import DbLessonBook
from storage.settings import StorageSettings

log = logging.getLogger("dialectic")

WRITE_PROBE_TIMEOUT_S = 3.0  # a database that takes longer to commit one row is not healthy


def process_name() -> str:
    """This process as the heartbeats table names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class Health:
    """Whether this process can do its work; `problems` say why not, one sentence each."""

    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Runtime:
    engine: EngineSettings
    settings: ServiceSettings
    db: Database
    service: DebateService
    reviews: ReviewDesk
    workers: list[Worker] = field(default_factory=list)
    sign_in: IdentityProvider | None = None   # "Sign in with Slack", when Slack is configured
    #: multi-workspace mode's installed workspaces and their admins (None: one workspace's
    #: service); sessions and reviewer links are then each scoped to one workspace
    workspaces: WorkspaceDirectory | None = None
    #: Outside connections that are down, by name ("slack": Socket Mode cannot connect): what
    #: `/healthz` says beside the process's own health.
    link_problems: dict[str, str] = field(default_factory=dict)
    #: the outbox's dispatchers in this process (each wakes when called)
    delivery_wakers: list[Callable[[], None]] = field(default_factory=list)
    name: str = field(default_factory=process_name)

    @property
    def is_rehearsal(self) -> bool:
        return self.engine.is_rehearsal

    def url(self, debate_id: str) -> str:
        """The debate's transcript page (signed when the service is token-protected)."""
        return self.service.url(debate_id)

    def notify_deliveries(self) -> None:
        """Something became due in the outbox: this process's dispatcher looks now."""
        for wake in self.delivery_wakers:
            wake()

    def notify_workers(self) -> None:
        for worker in self.workers:
            worker.notify()

    def worker_slots(self) -> int:
        return sum(w.concurrency for w in self.workers)

    async def health(self) -> Health:
        """Unhealthy while the database cannot be written (a committed heartbeat, not `SELECT
        1`: a read-only file or a full disk still answers reads) or no worker can claim."""
        problems: list[str] = []
        unwritable = await self._write_problem()
        if unwritable is not None:
            problems.append(unwritable)
        stuck = [p for w in self.workers if (p := w.problem()) is not None]
        if self.workers and len(stuck) == len(self.workers):
            problems += stuck
        return Health(tuple(problems))

    async def _write_problem(self) -> str | None:
        try:
            async with asyncio.timeout(WRITE_PROBE_TIMEOUT_S):
                async with self.db.transaction() as session:
                    await heartbeats.beat(session, owner=self.name, now=self.service.clock())
        except TimeoutError:
            return (f"the database {self.db.where} did not take a write within "
                    f"{WRITE_PROBE_TIMEOUT_S:.0f} s")
        except DATABASE_ERRORS as exc:
            return str(exc) or type(exc).__name__
        return None

    async def deliveries(self) -> outbox.Backlog:
        """What finished debates owe Slack and have not received (empty when the database is
        away: the health check says that already)."""
        try:
            async with self.db.transaction(readonly=True) as session:
                return await outbox.backlog(session)
        except DATABASE_ERRORS:
            return outbox.Backlog()

    async def metrics(self) -> dict[str, Any]:
        day = self.service.clock().date()
        async with self.db.transaction() as session:
            data = await metrics_repo.service_metrics(session, day=day)
        data["budget"] = await self.service.budget_today()
        data["rehearsal"] = self.is_rehearsal
        return data

    async def close(self) -> None:
        await self.service.aclose()
        await self.db.dispose()


async def build_runtime(engine: EngineSettings, settings: ServiceSettings,
                        storage: StorageSettings, *, migrate: bool = True) -> Runtime:
    db = Database(storage.database_url)
    if migrate:
        await db.upgrade()
    service = DebateService(engine=engine, settings=settings, db=db,
                            llm_factory=functools.partial(make_llm, lessons=DbLessonBook(db)))
    service.sink_factories.append(telemetry.sink_for)
    service.finished_hooks.append(telemetry.on_finished)
    service.submitted_hooks.append(telemetry.on_submitted)
    log.info(describe(engine))
    reviews = ReviewDesk(service, Reviewers(settings.reviewers))
    return Runtime(engine=engine, settings=settings, db=db, service=service, reviews=reviews)
