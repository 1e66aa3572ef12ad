"""Workers: claim queued debates with a lease, run them, renew the lease while running.

A debate whose worker died is reclaimed once its lease expires and resumes from its checkpointed
steps. On shutdown a worker stops claiming, gives running debates `grace` seconds, then cancels
them and releases their leases so another worker picks them up at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid

from bot.service.debates import DebateService
from storage import queue
from storage.records import DebateRecord

log = logging.getLogger("dialectic.worker")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    def __init__(self, service: DebateService, *, concurrency: int | None = None,
                 worker_id: str | None = None, grace: float = 20.0) -> None:
        self.service = service
        self.settings = service.settings
        self.concurrency = concurrency or self.settings.worker_concurrency
        self.worker_id = worker_id or worker_name()
        self.grace = grace
        self.running: dict[str, asyncio.Task[None]] = {}
        self.wakeup = asyncio.Event()

    def notify(self) -> None:
        """Something was queued: look now instead of waiting for the next poll."""
        self.wakeup.set()

    async def run(self, stop: asyncio.Event) -> None:
        log.info("worker %s started (%d slots)", self.worker_id, self.concurrency)
        try:
            while not stop.is_set():
                claimed = await self._fill_slots()
                if not claimed:
                    await self._idle(stop)
        finally:
            await self._shutdown()

    async def _fill_slots(self) -> bool:
        claimed = False
        while len(self.running) < self.concurrency:
            record = await self._claim()
            if record is None:
                break
            claimed = True
            task = asyncio.create_task(self._work(record), name=f"debate-{record.id}")
            self.running[record.id] = task
        return claimed

    async def _claim(self) -> DebateRecord | None:
        now = self.service.clock()
        async with self.service.db.transaction() as session:
            return await queue.claim(session, worker_id=self.worker_id,
                                     lease_seconds=self.settings.lease_seconds, now=now)

    async def _idle(self, stop: asyncio.Event) -> None:
        self.wakeup.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wakeup.wait())]
        done_any = [t for t in self.running.values()]
        try:
            await asyncio.wait([*waiters, *done_any], timeout=self.settings.poll_interval,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def _work(self, record: DebateRecord) -> None:
        renewer = asyncio.create_task(self._renew(record.id, asyncio.current_task()))
        try:
            finished = await self.service.execute(record, worker_id=self.worker_id)
            log.info("debate %s %s", record.id, finished.status.value)
        except asyncio.CancelledError:
            log.warning("debate %s interrupted on %s; it will resume elsewhere", record.id,
                        self.worker_id)
            raise
        except Exception:  # the debate stays leased and is reclaimed and resumed after expiry
            log.exception("debate %s crashed on %s", record.id, self.worker_id)
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            self.running.pop(record.id, None)

    async def _renew(self, debate_id: str, work: asyncio.Task[object] | None) -> None:
        every = max(self.settings.lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(every)
            now = self.service.clock()
            async with self.service.db.transaction() as session:
                held = await queue.renew(session, debate_id=debate_id, worker_id=self.worker_id,
                                         lease_seconds=self.settings.lease_seconds, now=now)
            if not held and work is not None:
                log.warning("lost the lease on %s; stopping my copy", debate_id)
                work.cancel()
                return

    async def _shutdown(self) -> None:
        if not self.running:
            return
        log.info("worker %s: waiting up to %.0f s for %d debates", self.worker_id, self.grace,
                 len(self.running))
        _, pending = await asyncio.wait(list(self.running.values()), timeout=self.grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for debate_id in [t.get_name().removeprefix("debate-") for t in pending]:
            async with self.service.db.transaction() as session:
                await queue.release(session, debate_id=debate_id, worker_id=self.worker_id)
            log.info("released %s for another worker", debate_id)
