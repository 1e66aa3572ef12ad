"""Workers: claim queued debates with a lease, run them, renew the leases while running (all of a
worker's leases in one statement).

A debate whose worker died is reclaimed once its lease expires and resumes from its checkpointed
steps. On shutdown a worker stops claiming, gives running debates `grace` seconds, then cancels
them and releases their leases so another worker picks them up at once.

The database may go away under a running worker (a restart, a failover, a full disk). Nothing
of the worker dies with it: claiming is retried with a capped, jittered backoff until the
database answers again, a lease that cannot be renewed is tried again at the next renewal, and
a debate whose step could not be saved stops and is reclaimed from its checkpoints. While
claiming fails, `problem()` says so (the health check reports it). Any other error ends `run`;
the process then exits non-zero (bot/main.py) so its supervisor starts a clean one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import uuid
from datetime import datetime

from bot.service.debates import DebateService
from bot.service.traces import attempt_span
from engine.errors import DialecticError
from storage import queue
from storage.errors import DATABASE_ERRORS
from storage.records import DebateRecord

log = logging.getLogger("dialectic.worker")

RETRY_CAP_S = 10.0        # the longest wait between claims while the database is away
STILL_FAILING_EVERY = 20  # failed claims between two "still cannot claim" log lines
CLAIM_BATCH = 50          # debates claimed in one transaction at most (short transactions)


class WorkerStopped(DialecticError):
    """A worker's claim loop ended on an error it could not retry: the process should exit
    (non-zero) so that its supervisor starts a fresh one."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def retry_delay(failures: int, *, first: float, rng: random.Random) -> float:
    """Seconds before claim attempt `failures + 1`: doubling from `first`, capped, jittered."""
    return min(first * 2.0 ** (failures - 1), RETRY_CAP_S) * rng.uniform(0.5, 1.0)


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
        self.alive = False
        self.failing: tuple[datetime, str] | None = None  # since when claiming fails, and why
        self.drained = False  # the last claim found fewer debates than there were free slots
        self._rng = random.Random()

    def notify(self) -> None:
        """Something was queued: look now instead of waiting for the next poll."""
        self.wakeup.set()

    def problem(self) -> str | None:
        """Why this worker cannot take debates right now, or None when it can."""
        if not self.alive:
            return f"worker {self.worker_id} is not running"
        if self.failing is not None:
            since, reason = self.failing
            return (f"worker {self.worker_id} cannot claim debates since "
                    f"{since:%H:%M:%S} UTC: {reason}")
        return None

    async def run(self, stop: asyncio.Event) -> None:
        self.service.llm()  # the provider client (its pool, TLS context, lazy imports) is built
        # now, not by the first debate claimed
        log.info("worker %s started (%d slots)", self.worker_id, self.concurrency)
        self.alive = True
        failures = 0
        renewer = asyncio.create_task(self._renew_all(), name=f"leases-{self.worker_id}")
        try:
            while not stop.is_set():
                try:
                    claimed = await self._fill_slots()
                except DATABASE_ERRORS as exc:
                    failures += 1
                    self._claim_failed(exc, failures)
                    await self._wait(stop, retry_delay(failures, first=self.settings.poll_interval,
                                                       rng=self._rng))
                    continue
                if failures:
                    self._claim_recovered(failures)
                    failures = 0
                if not claimed:
                    await self._idle(stop)
        finally:
            self.alive = False
            try:
                await self._shutdown()
            finally:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer

    def _claim_failed(self, exc: BaseException, failures: int) -> None:
        reason = str(exc) or type(exc).__name__
        if self.failing is None:
            self.failing = (self.service.clock(), reason)
            log.warning("worker %s cannot claim debates: %s; retrying with backoff",
                        self.worker_id, reason)
        elif failures % STILL_FAILING_EVERY == 0:
            log.warning("worker %s still cannot claim debates after %d attempts: %s",
                        self.worker_id, failures, reason)

    def _claim_recovered(self, failures: int) -> None:
        since = self.failing[0] if self.failing else self.service.clock()
        seconds = (self.service.clock() - since).total_seconds()
        log.info("worker %s claims debates again (after %d failed attempts, %.0f s)",
                 self.worker_id, failures, seconds)
        self.failing = None

    async def _fill_slots(self) -> bool:
        """Claim debates for the free slots, up to CLAIM_BATCH per transaction."""
        claimed = False
        while (free := self.concurrency - len(self.running)) > 0:
            wanted = min(free, CLAIM_BATCH)
            records = await self._claim(wanted)
            for record in records:
                if record.id in self.running:   # its lease ran out while it ran here: keep
                    continue                    # the one copy (the claim renewed its lease)
                task = asyncio.create_task(self._work(record), name=f"debate-{record.id}")
                self.running[record.id] = task
            claimed = claimed or bool(records)
            self.drained = len(records) < wanted
            if self.drained:  # the queue has no more for now
                break
        return claimed

    async def _claim(self, wanted: int) -> list[DebateRecord]:
        now = self.service.clock()
        async with self.service.db.transaction() as session:
            return await queue.claim_many(session, worker_id=self.worker_id,
                                          lease_seconds=self.settings.lease_seconds, now=now,
                                          limit=wanted)

    async def _wait(self, stop: asyncio.Event, seconds: float) -> None:
        """Up to `seconds`, or until asked to stop or told something was queued."""
        self.wakeup.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wakeup.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def _idle(self, stop: asyncio.Event) -> None:
        """Until the next poll, a stop, or news of a queued debate; and, while the queue had more
        than the slots could take, until a debate ends and frees one. Once the queue was found
        empty an ending debate is no reason to ask it again (with a thousand debates ending,
        that was a claim and a wait over every running task per ending: quadratic)."""
        self.wakeup.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wakeup.wait())]
        done_any = [] if self.drained else list(self.running.values())
        try:
            await asyncio.wait([*waiters, *done_any], timeout=self.settings.poll_interval,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def _work(self, record: DebateRecord) -> None:
        try:
            async with attempt_span(self.service.db, record, worker_id=self.worker_id):
                finished = await self.service.execute(record, worker_id=self.worker_id)
                log.info("debate %s %s", record.id, finished.status.value)
        except asyncio.CancelledError:
            log.warning("debate %s interrupted on %s; it will resume elsewhere", record.id,
                        self.worker_id)
            raise
        except DATABASE_ERRORS as exc:  # its saved steps are kept; the lease runs out
            log.warning("debate %s stopped on %s: %s; it resumes from its saved steps once its "
                        "lease runs out", record.id, self.worker_id, exc)
        except Exception:  # the debate stays leased and is reclaimed and resumed after expiry
            log.exception("debate %s crashed on %s", record.id, self.worker_id)
        finally:
            self.running.pop(record.id, None)

    async def _renew_all(self) -> None:
        """Every lease/3 s, the leases of every debate this worker runs, in one statement (not
        one transaction per debate); a debate whose lease was reclaimed stops here."""
        every = max(self.settings.lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(every)
            running = dict(self.running)
            if not running:
                continue
            try:
                lost = await self._renew(sorted(running))
            except DATABASE_ERRORS as exc:  # nobody else can claim them while this fails either
                log.warning("could not renew the leases of %d debates (%s); trying again",
                            len(running), exc)
                continue
            for debate_id in lost:
                work = running[debate_id]
                if not work.done():
                    log.warning("lost the lease on %s (taken by another worker, or the "
                                "debate was cancelled); stopping my copy", debate_id)
                    work.cancel()

    async def _renew(self, debate_ids: list[str]) -> set[str]:
        """Renew in one statement; the debates another worker took meanwhile. One that finished
        (its lease let go with its result) is not lost: it is left to finish up."""
        now = self.service.clock()
        async with self.service.db.transaction() as session:
            held = await queue.renew_many(session, debate_ids=debate_ids,
                                          worker_id=self.worker_id,
                                          lease_seconds=self.settings.lease_seconds, now=now)
            missing = [d for d in debate_ids if d not in held]
            return await queue.taken_elsewhere(session, debate_ids=missing,
                                               worker_id=self.worker_id)

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
            await self._release(debate_id)

    async def _release(self, debate_id: str) -> None:
        try:
            async with self.service.db.transaction() as session:
                await queue.release(session, debate_id=debate_id, worker_id=self.worker_id)
        except DATABASE_ERRORS as exc:
            log.warning("could not release %s (%s); another worker takes it once its lease runs "
                        "out", debate_id, exc)
            return
        log.info("released %s for another worker", debate_id)
