"""A debate run in the terminal that asked for it (`dialectic run`): submitted like any other (the
same admission, hold, purse, ledger and audit; origin `terminal`), claimed by this process in the
transaction that queues it, so no `serve` or `worker` on the same database ever sees it queued,
its lease renewed while it runs here, its result stored (`dialectic list`, `show`, the console).

Interrupted (Ctrl-C), it ends failed with what it spent, rather than waiting for a worker to
resume a debate nobody is watching; a retry (the console, the API) resumes it from its saved
steps. If this process loses the lease instead (it stalled past it and a worker took the debate
over), it stops its copy and follows the worker's to its end: the debate is the worker's now,
and this process must not record it failed under it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.service.debates import DebateService
from bot.service.providers import make_llm
from bot.service.settings import ServiceSettings
from engine.domain import CostBreakdown
from engine.money import price_memo
from engine.ports import EventSink
from engine.provider import tls
from engine.settings import EngineSettings
from storage import budget, debates, queue
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.records import DebateRecord, DebateStatus
from storage.settings import StorageSettings

log = logging.getLogger("dialectic.terminal")

#: the file in the data directory that keeps the price library's answers of the day
PRICE_MEMO = "library-prices.json"
INTERRUPTED = ("interrupted in the terminal that ran it; its finished steps are kept: retry it "
               "(the console, or POST /api/debates/ID/retry) to resume")


def terminal_worker() -> str:
    """The lease owner a terminal run holds its debate as."""
    return f"terminal:{socket.gethostname()}:{os.getpid()}"


@asynccontextmanager
async def terminal_service(engine: EngineSettings, settings: ServiceSettings,
                           storage: StorageSettings, *, slack: bool = False
                           ) -> AsyncIterator[DebateService]:
    """The service over the configured database (migrated first when it is behind). `slack`:
    Slack is configured, so what a finished debate owes it (a review request) goes to the outbox
    for a `serve` or `worker` to deliver, as from every other door."""
    if not engine.is_rehearsal:
        tls.prepare()   # the provider's TLS context loads in a thread while this one works
    if storage.data_dir.is_dir():   # today's library prices, kept for the next run's start
        price_memo.keep_in(storage.data_dir / PRICE_MEMO)
    db = Database(storage.database_url)
    try:
        await db.upgrade()
        service = DebateService(engine=engine, settings=settings, db=db, llm_factory=make_llm)
        service.outbox_targets = frozenset({"slack"}) if slack else frozenset()
        try:
            yield service
        finally:
            await service.aclose()
    finally:
        await db.dispose()


async def run_here(service: DebateService, record: DebateRecord, *, worker_id: str,
                   sink: EventSink | None = None) -> DebateRecord:
    """Run a debate this process claimed, keeping its lease; `sink` sees its events."""
    if sink is not None:
        service.sink_factories.append(lambda r: sink if r.id == record.id else None)
    work = asyncio.ensure_future(service.execute(record, worker_id=worker_id))
    lost = asyncio.Event()
    keeper = asyncio.ensure_future(_keep_lease(service, record.id, worker_id, work, lost))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        this = asyncio.current_task()
        if lost.is_set() and this is not None and not this.cancelling():
            return await _followed(service, record.id)   # taken over, not interrupted
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        await _interrupted(service, record, worker_id)
        raise
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper


async def _keep_lease(service: DebateService, debate_id: str, worker_id: str,
                      work: asyncio.Future[DebateRecord], lost_it: asyncio.Event) -> None:
    """Renew the lease every lease/3 s; stop our copy (and say so in `lost_it`) if another
    worker has taken it."""
    lease = service.settings.lease_seconds
    while not work.done():
        await asyncio.sleep(max(lease / 3, 0.05))
        try:
            async with service.db.transaction() as session:
                held = await queue.renew(session, debate_id=debate_id, worker_id=worker_id,
                                         lease_seconds=lease, now=service.clock())
                lost = not held and bool(await queue.taken_elsewhere(
                    session, debate_ids=[debate_id], worker_id=worker_id))
        except DATABASE_ERRORS as exc:
            log.warning("could not renew the lease on %s (%s); trying again", debate_id, exc)
            continue
        if lost and not work.done():   # the workers' rule: a finished debate is never lost
            log.warning("debate %s was taken over by another worker; following it there",
                        debate_id)
            lost_it.set()
            work.cancel()


#: a debate still being run (by whichever worker holds it)
RUNNING = frozenset({DebateStatus.CREATED, DebateStatus.QUEUED, DebateStatus.DEBATING,
                     DebateStatus.JUDGING})


async def _followed(service: DebateService, debate_id: str) -> DebateRecord:
    """The debate once the worker that took it over has run it to its end."""
    pause = max(service.settings.poll_interval, 0.05)
    while True:
        try:
            async with service.db.transaction(readonly=True) as session:
                record = await debates.get(session, debate_id)
        except DATABASE_ERRORS as exc:
            log.warning("could not read %s (%s); trying again", debate_id, exc)
        else:
            if record.status not in RUNNING:
                return record
        await asyncio.sleep(pause)


async def _interrupted(service: DebateService, record: DebateRecord, worker_id: str) -> None:
    """Record the interruption: failed, with what its replies were charged."""
    async with service.db.transaction(readonly=True) as session:
        spent = await budget.spent(session, record.id)
    result = service.failed_result(record, INTERRUPTED)
    result = result.model_copy(update={"cost": CostBreakdown(usd=spent)})
    await asyncio.shield(service.finish(record.id, result, actor=worker_id))


__all__ = ["INTERRUPTED", "PRICE_MEMO", "run_here", "terminal_service", "terminal_worker"]
