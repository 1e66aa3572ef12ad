"""Forgetting what is no longer needed: seen messages after `MESSAGE_TTL` (thread context for
debates started later than that is unlikely), dedupe keys after `DEDUPE_TTL` (Slack stops
retrying after minutes). Runs hourly in the server; replicas doing it at once is harmless."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from aiohttp import web

from bot.service.runtime import Runtime
from storage import dedupe
from storage import slack as slack_store
from storage.errors import DATABASE_ERRORS

log = logging.getLogger("dialectic.slack")

MESSAGE_TTL = timedelta(days=30)
DEDUPE_TTL = timedelta(days=1)
EVERY_SECONDS = 3600.0


async def purge_once(rt: Runtime) -> tuple[int, int]:
    """(messages, dedupe keys) forgotten."""
    now = rt.service.clock()
    async with rt.db.transaction() as session:
        messages = await slack_store.forget_messages(session, before=now - MESSAGE_TTL)
        keys = await dedupe.purge(session, before=now - DEDUPE_TTL)
    return messages, keys


async def _loop(rt: Runtime, every: float) -> None:
    while True:
        try:
            messages, keys = await purge_once(rt)
            if messages or keys:
                log.info("Slack housekeeping: forgot %d messages and %d dedupe keys",
                         messages, keys)
        except DATABASE_ERRORS as exc:
            log.warning("Slack housekeeping failed (will retry): %s", type(exc).__name__)
        await asyncio.sleep(every)


def housekeeping(rt: Runtime, every: float = EVERY_SECONDS
                 ) -> Callable[[web.Application], AsyncIterator[None]]:
    """A `cleanup_ctx` running `purge_once` every `every` seconds while the server runs."""
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(_loop(rt, every), name="slack-housekeeping")
        yield
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    return ctx


__all__ = ["DEDUPE_TTL", "MESSAGE_TTL", "housekeeping", "purge_once"]
