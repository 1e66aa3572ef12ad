"""Workers ride out the database going away, and say so while it is away.

The fault is real: the `debates` table is renamed away under a running worker (every claim then
fails in the driver with "no such table" / "relation does not exist") and renamed back. The
worker keeps its task, backs off, reports itself unable to claim (so `/healthz` is 503), and
claims again once the table is back; a debate submitted after the outage completes. A loop that
ends on a bug instead raises `WorkerStopped`, so the process exits non-zero for its supervisor.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Iterator
from datetime import datetime

import pytest
from sqlalchemy import text

from bot.assembly import running_workers, until_signalled
from bot.service.worker import RETRY_CAP_S, WorkerStopped, retry_delay
from engine.domain import DebateRequest, utcnow
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.support.service_fixtures import rehearsal_settings, runtime, wait_done

TOPIC = "Should we move billing to PostgreSQL?"


async def _rename(db: Database, old: str, new: str) -> None:
    async with db.transaction() as session:
        await session.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


async def _until(condition: object, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def test_a_worker_survives_the_database_going_away_and_claims_when_it_is_back(
        db: Database, caplog: pytest.LogCaptureFixture) -> None:
    rt = runtime(db, rehearsal_settings(poll_interval=0.02))
    caplog.set_level(logging.INFO, logger="dialectic.worker")
    async with running_workers(rt, 2) as task:
        worker = rt.workers[0]
        await _until(lambda: worker.alive)
        assert (await rt.health()).ok
        await _rename(db, "debates", "debates_away")
        await _until(lambda: worker.failing is not None)
        health = await rt.health()
        assert not health.ok and not task.done()
        assert len(health.problems) == 1 and "cannot claim debates" in health.problems[0]
        assert "dialectic db upgrade" in health.problems[0]  # the storage border's own words
        await asyncio.sleep(0.3)  # several failed claims: still one warning, still alive
        assert not task.done()
        await _rename(db, "debates_away", "debates")
        await _until(lambda: worker.failing is None)
        assert (await rt.health()).ok
        sub = await rt.service.submit(DebateRequest(topic=TOPIC, mode="simple"),
                                      origin=Origin(surface="api"))
        rt.notify_workers()
        assert (await wait_done(rt.service, sub.record.id)).status is DebateStatus.COMPLETED
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "cannot claim debates" in warnings[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)
    assert any("claims debates again" in r.getMessage() for r in caplog.records)


async def test_the_health_check_fails_while_the_database_refuses_writes(
        sqlite_db: Database) -> None:
    """A read-only SQLite database answers `SELECT 1`; the committed heartbeat fails."""
    url = f"sqlite+aiosqlite:///file:{sqlite_db.url.database}?mode=ro&uri=true"
    read_only = Database(url)
    try:
        rt = runtime(read_only, rehearsal_settings())
        health = await rt.health()
        assert not health.ok
        assert "readonly database" in health.problems[0]
        assert "check DATABASE_URL" in health.problems[0]
        assert await rt.service.recent() == []  # reads still work
    finally:
        await read_only.dispose()


class _BrokenClock:
    """A clock that stops working after `good` readings: a bug in the claim loop."""

    def __init__(self, good: int) -> None:
        self.readings: Iterator[int] = itertools.count()
        self.good = good

    def __call__(self) -> datetime:
        if next(self.readings) >= self.good:
            raise RuntimeError("clock broke")
        return utcnow()


async def test_a_worker_loop_that_ends_on_a_bug_stops_the_process(sqlite_db: Database) -> None:
    rt = runtime(sqlite_db, rehearsal_settings(poll_interval=0.02))
    rt.service.clock = _BrokenClock(good=3)
    with pytest.raises(WorkerStopped, match=r"clock broke.*supervisor"):
        async with running_workers(rt, 1) as task:
            await until_signalled(task)  # returns once the worker's task has ended
    assert rt.workers == []


@pytest.mark.parametrize(("failures", "low", "high"), [
    (1, 0.25, 0.5), (2, 0.5, 1.0), (3, 1.0, 2.0), (30, RETRY_CAP_S / 2, RETRY_CAP_S)])
def test_claims_back_off_doubling_up_to_a_cap(failures: int, low: float, high: float) -> None:
    rng = random.Random(7)
    delays = [retry_delay(failures, first=0.5, rng=rng) for _ in range(50)]
    assert all(low <= d <= high for d in delays)
