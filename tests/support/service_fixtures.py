"""Helpers to build the service over a test database and run its workers in the background."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bot.service.debates import DebateService
from bot.service.providers import make_llm
from bot.service.reviews import ReviewDesk, Reviewers
from bot.service.runtime import Runtime
from bot.service.worker import Worker
from bot.settings import Settings
from engine.settings import ModelPrice
from storage.db import Database
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus

DONE = TERMINAL_STATUSES | {DebateStatus.AWAITING_REVIEW}
#: a request of every mode and of every built-in preset
EVERY_MODE_AND_PRESET: list[dict[str, Any]] = [
    {"mode": "simple"}, {"mode": "structured"}, {"mode": "consensus"}, {"mode": "panel"},
    {"mode": "critique"}, {"mode": "redteam"},
    {"preset": "market"}, {"preset": "decision"}, {"preset": "compliance"},
    {"preset": "appeal"}, {"preset": "brief"},
]


def rehearsal_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"rehearsal": True, "poll_interval": 0.05, "lease_seconds": 5.0,
                              "daily_budget_usd": 10.0}
    values.update(overrides)
    return Settings(**values)


def priced(usd_per_million: float = 1000.0, **overrides: Any) -> Settings:
    """Rehearsal settings where the offline model costs money, to exercise the budget."""
    price = ModelPrice(input=usd_per_million, output=usd_per_million)
    return rehearsal_settings(prices={"rehearsal": price}, **overrides)


def service(db: Database, settings: Settings) -> DebateService:
    return DebateService(engine=settings.engine, settings=settings.service, db=db,
                         llm_factory=make_llm)


def runtime(db: Database, settings: Settings) -> Runtime:
    """The runtime `build_runtime` would make, over an already migrated test database."""
    svc = service(db, settings)
    return Runtime(engine=settings.engine, settings=settings.service, db=db, service=svc,
                   reviews=ReviewDesk(svc, Reviewers(settings.service.reviewers)))


@asynccontextmanager
async def running_worker(svc: DebateService, concurrency: int = 4,
                         worker_id: str | None = None) -> AsyncIterator[Worker]:
    stop = asyncio.Event()
    worker = Worker(svc, concurrency=concurrency, worker_id=worker_id, grace=5.0)
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        await task


async def wait_done(svc: DebateService, debate_id: str, timeout: float = 30.0) -> DebateRecord:
    async with asyncio.timeout(timeout):
        while True:
            record = await svc.get(debate_id)
            if record.status in DONE:
                return record
            await asyncio.sleep(0.05)
