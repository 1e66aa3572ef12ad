"""Everything a running process shares, built once from the settings: database, service, workers."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.service import telemetry as metrics
from bot.service.debates import DebateService
from bot.service.providers import describe, make_llm
from engine.settings import Settings
from storage import metrics as metrics_repo
from storage.db import Database

log = logging.getLogger("dialectic")


class SlackPoster(Protocol):
    """How non-Slack code (the scheduler) posts to Slack: paced, retried, blocks validated.
    `bot.slack` provides it when Slack is configured; `Runtime.slack` is None otherwise."""

    async def post(self, channel: str, message: Any, *, thread_ts: str | None = None
                   ) -> str | None:
        """Post a `bot.blocks.Message`; returns the message ts (None if it could not be posted)."""
        ...

    async def update(self, channel: str, ts: str, message: Any) -> None: ...


@dataclass
class Runtime:
    settings: Settings
    db: Database
    service: DebateService
    workers: list[Any] = field(default_factory=list)   # bot.worker.Worker
    slack: SlackPoster | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def notify_workers(self) -> None:
        for worker in self.workers:
            worker.notify()

    def worker_slots(self) -> int:
        return sum(w.concurrency for w in self.workers)

    async def metrics(self) -> dict[str, Any]:
        day = self.service.clock().date()
        async with self.db.transaction() as session:
            data = await metrics_repo.service_metrics(session, day=day)
        data["budget"] = await self.service.budget_today()
        data["rehearsal"] = self.settings.is_rehearsal
        return data

    async def close(self) -> None:
        await self.service.aclose()
        await self.db.dispose()


async def build_runtime(settings: Settings, *, migrate: bool = True) -> Runtime:
    db = Database(settings.database_url)
    if migrate:
        await db.upgrade()
    service = DebateService(settings=settings, db=db, llm_factory=make_llm)
    service.sink_factories.append(metrics.sink_for)
    service.finished_hooks.append(metrics.on_finished)
    service.submitted_hooks.append(metrics.on_submitted)
    log.info(describe(settings))
    return Runtime(settings=settings, db=db, service=service)


async def wait_forever(stop: asyncio.Event) -> None:
    await stop.wait()
