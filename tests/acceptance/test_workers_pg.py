"""Two `dialectic worker` processes over one PostgreSQL; one is SIGKILLed mid-debate.

The kill is aimed: only once the victim (known by its worker id, which starts with its host and
pid) holds a lease on a debate that already has a saved step and has a call for that debate in
flight at the fake provider (each worker has its own path there). Then: every debate completes
exactly once, no step saved before the kill is ever requested again (a unique constraint on
(debate, step key) forbids a second copy, and a resumed debate reads its steps back), and the
only requests sent twice are the victim's calls that the kill cut off.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.service.debates import DebateService
from bot.settings import Settings
from engine.domain import DebateRequest
from storage import audit, steps
from storage.db import Database
from storage.models import DebateRow, StepRow
from storage.records import DebateRecord, DebateStatus, Origin
from tests.fakes.fixtures import gateway_settings, spotlit
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, message_text
from tests.support.service_fixtures import service
from tests.support.storage_fixtures import PG_URL_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]
DEBATES = 6
LATENCY = 0.3
FRESH = 0.15  # a call in flight for less than this is still in flight when the kill lands
FINISHED = {DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW, DebateStatus.FAILED}
TOPIC = re.compile(r"Adopt service mesh #(\d+)\?")
Step = tuple[str, str]  # (debate id, step key)


@pytest.fixture
async def pg_database_url() -> AsyncIterator[str]:
    """A whole fresh database (worker processes connect with a plain URL)."""
    base = os.environ.get(PG_URL_ENV)
    if not base:
        pytest.skip(f"{PG_URL_ENV} is not set: run under scripts/with-postgres.sh (make test)")
    name = f"workers_{uuid.uuid4().hex[:10]}"
    admin = create_async_engine(base, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.exec_driver_sql(f"CREATE DATABASE {name}")
    yield base.rsplit("/", 1)[0] + f"/{name}"
    async with admin.connect() as conn:
        await conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
    await admin.dispose()


def _env(url: str, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIALECTIC_",
                                                                    "SLACK_"))}
    env.update({"DATABASE_URL": url, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": base_url,
                "DIALECTIC_LEASE_SECONDS": "1.5", "DIALECTIC_POLL_INTERVAL": "0.1",
                "DIALECTIC_CONFIG": os.devnull, "DIALECTIC_LOG_LEVEL": "INFO"})
    return env


async def _spawn(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "worker", "--concurrency", "3", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


class Calls:
    """The fake's requests read as steps: which debate (by its topic) and which step key."""

    def __init__(self, fake: FakeOpenAI, topics: dict[str, str]) -> None:
        self.fake = fake
        self.debate_of_topic = topics  # "#3" -> debate id

    def step(self, request: RecordedRequest) -> Step:
        text = "\n".join(message_text(m) for m in request.messages)
        found = TOPIC.search(spotlit(text))  # the topic reaches the model spotlighted
        assert found is not None, text[:300]
        return self.debate_of_topic[found.group(1)], request.step

    def victims(self) -> list[RecordedRequest]:
        return [r for r in self.fake.requests if r.path.startswith("/victim/")]


async def _stored(db: Database) -> set[Step]:
    async with db.transaction(readonly=True) as session:
        rows = await session.execute(select(StepRow.debate_id, StepRow.key))
    return {(d, k) for d, k in rows}


async def _leased_by(db: Database, owner_prefix: str) -> set[str]:
    async with db.transaction(readonly=True) as session:
        rows = await session.scalars(select(DebateRow.id).where(
            DebateRow.lease_owner.startswith(owner_prefix),
            DebateRow.status.in_(("debating", "judging"))))
    return set(rows)


async def _aim(db: Database, calls: Calls, owner_prefix: str) -> bool:
    """The victim holds a lease on a debate with a saved step and a fresh call for it in
    flight."""
    leased = await _leased_by(db, owner_prefix)
    stored = await _stored(db)
    started = {d for d, _ in stored}
    now = time.monotonic()
    # the fake answers LATENCY after arrival: a call younger than FRESH is still in flight
    return any(now - r.at < FRESH and calls.step(r)[0] in leased & started
               for r in calls.victims())


async def test_a_killed_worker_loses_nothing_and_repeats_nothing(pg_database_url: str) -> None:
    async with FakeOpenAI(latency=LATENCY) as fake:
        settings = Settings(**gateway_settings(fake.base_url).model_dump(),
                            database_url=pg_database_url)
        db = Database(pg_database_url)
        await db.upgrade()
        svc = service(db, settings)
        ids = [(await svc.submit(DebateRequest(topic=f"Adopt service mesh #{i}?"),
                                 origin=Origin(surface="api"))).record.id for i in range(DEBATES)]
        calls = Calls(fake, {str(i): debate_id for i, debate_id in enumerate(ids)})
        root = fake.base_url.removesuffix("/v1")
        victim = await _spawn(_env(pg_database_url, f"{root}/victim/v1"))
        owner = f"{socket.gethostname()}:{victim.pid}:"
        survivor: asyncio.subprocess.Process | None = None
        try:
            async with asyncio.timeout(90):  # however long the victim takes to start
                while not await _leased_by(db, owner):
                    await asyncio.sleep(0.02)
                survivor = await _spawn(_env(pg_database_url, f"{root}/survivor/v1"))
                while not await _aim(db, calls, owner):
                    await asyncio.sleep(0.01)
            killed_at = time.monotonic()
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            saved_before_kill = await _stored(db)
            records = await _wait_all(svc, ids, timeout=120)
        finally:
            if victim.returncode is None:  # the test failed before the kill
                victim.kill()
                await victim.wait()
            err = await _stop(survivor)
        stored_steps = await _check_each_once(db, records)
        await db.dispose()
    assert survivor is not None and survivor.returncode == 0, err[-2000:]
    assert all(r.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
               for r in records), [(r.id, r.status.value, r.error) for r in records]
    cut_off = [r for r in calls.victims() if calls.step(r) not in saved_before_kill]
    assert cut_off, "the kill landed while the victim had a call in flight"
    again = [calls.step(r) for r in fake.requests
             if r.at > killed_at and calls.step(r) in saved_before_kill]
    assert again == [], f"steps saved before the kill were requested again: {again}"
    assert len(fake.requests) - stored_steps <= len(cut_off)  # re-sent: only what was cut off
    assert any(r.attempts > 1 for r in records), "the victim's debates were reclaimed"


async def _stop(worker: asyncio.subprocess.Process | None) -> str:
    if worker is None:
        return ""
    if worker.returncode is None:
        worker.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(worker.communicate(), 60)
    return err.decode()


async def _check_each_once(db: Database, records: list[DebateRecord]) -> int:
    """Every debate completed once, its chain intact, each step stored once; how many steps."""
    total = 0
    async with db.transaction() as session:
        for record in records:
            events = await audit.events(session, record.id)
            completions = [e for e in events if e.kind == "status_changed"
                           and e.data.get("to") == "completed"]
            assert len(completions) == 1, f"{record.id} completed {len(completions)} times"
            assert (await audit.verify(session, record.id)).ok
            keys = [s.key for s in await steps.list_steps(session, record.id)]
            assert len(keys) == len(set(keys)) == 10
            total += len(keys)
    return total


async def _wait_all(svc: DebateService, ids: list[str], timeout: float) -> list[DebateRecord]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        records = [await svc.get(i) for i in ids]
        if all(r.status in FINISHED for r in records):
            return records
        if loop.time() > deadline:
            states = [(r.id, r.status.value, r.lease_owner, r.attempts) for r in records]
            raise AssertionError(f"debates did not finish: {states}")
        await asyncio.sleep(0.2)
