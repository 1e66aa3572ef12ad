"""Forgetting what is no longer needed, hourly in every process that serves or works: expired
judge-cache entries (their 24 h are over), dedupe keys after `DEDUPE_TTL` (Slack stops retrying
a delivery after minutes), Slack starts that ended as long ago, and the heartbeats of processes
gone as long; and it finishes the workspace purges a crash cut short (bot/service/uninstalls.py).
Replicas doing it at
once is harmless; a database error is logged and tried again next time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

from bot.service import uninstalls
from bot.service.runtime import Runtime
from storage import caches, dedupe, heartbeats, starts
from storage.errors import DATABASE_ERRORS

log = logging.getLogger("dialectic.housekeeping")

DEDUPE_TTL = timedelta(days=1)
EVERY_SECONDS = 3600.0
Purge = Callable[[Runtime], Awaitable[dict[str, int]]]


async def purge_once(rt: Runtime) -> dict[str, int]:
    """What was forgotten, by kind."""
    now = rt.service.clock()
    async with rt.db.transaction() as session:
        judged = await caches.judge_cache_purge(session, now)
        keys = await dedupe.purge(session, before=now - DEDUPE_TTL)
        beats = await heartbeats.purge(session, before=now - DEDUPE_TTL)
        started = await starts.purge(session, before=now - DEDUPE_TTL)
    return {"judge cache entries": judged, "dedupe keys": keys, "heartbeats": beats,
            "Slack starts": started}


async def unfinished_purges(rt: Runtime) -> dict[str, int]:
    """The workspace purges left unfinished, finished (a restart's first housekeeping)."""
    return await uninstalls.resume(rt.db, clock=rt.service.clock)


async def _loop(rt: Runtime, purges: tuple[Purge, ...], every: float) -> None:
    while True:
        for purge in purges:
            try:
                done = await purge(rt)
            except DATABASE_ERRORS as exc:
                log.warning("housekeeping failed (will retry): %s", type(exc).__name__)
                continue
            if any(done.values()):
                log.info("housekeeping forgot %s", ", ".join(f"{n} {what}"
                                                             for what, n in done.items() if n))
        await asyncio.sleep(every)


@asynccontextmanager
async def housekeeping(rt: Runtime, *extra: Purge,
                       every: float = EVERY_SECONDS) -> AsyncIterator[None]:
    """Purge now and every `every` seconds while the block runs (`extra`: a surface's own)."""
    task = asyncio.create_task(_loop(rt, (purge_once, unfinished_purges, *extra), every),
                               name="housekeeping")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
