"""Two `dialectic worker` processes over one PostgreSQL; one is SIGKILLed mid-debate. Every
debate completes exactly once and no finished step is executed again (a unique constraint on
(debate, step key) makes a second copy impossible, and resumed debates read steps back)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.settings import Settings
from engine.domain import DebateRequest
from storage import audit, steps
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.openai_server import FakeOpenAI
from tests.service_fixtures import service
from tests.storage_fixtures import PG_URL_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]
DEBATES = 6
# the fake server's judges score at random, so most results are routed to a human
FINISHED = {DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW, DebateStatus.FAILED}


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


async def test_a_killed_worker_loses_nothing_and_repeats_nothing(pg_database_url: str) -> None:
    async with FakeOpenAI(latency=0.25) as fake:
        from tests.fakes.fixtures import gateway_settings

        settings = Settings(**gateway_settings(fake.base_url).model_dump(),
                            database_url=pg_database_url)
        db = Database(pg_database_url)
        await db.upgrade()
        svc = service(db, settings)
        ids = [(await svc.submit(DebateRequest(topic=f"Adopt service mesh #{i}?"),
                                 origin=Origin(surface="api"))).record.id for i in range(DEBATES)]
        env = _env(pg_database_url, fake.base_url)
        victim, survivor = await _spawn(env), await _spawn(env)
        try:
            async with asyncio.timeout(60):
                while len(fake.requests) < 12:
                    await asyncio.sleep(0.05)
            in_flight_at_kill = fake.in_flight
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            try:
                records = await _wait_all(svc, ids, timeout=90)
            except AssertionError:
                survivor.send_signal(signal.SIGTERM)
                _, err = await asyncio.wait_for(survivor.communicate(), 60)
                print(err.decode()[-6000:])
                raise
        finally:
            if survivor.returncode is None:
                survivor.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(survivor.communicate(), 60)
        assert survivor.returncode == 0, err.decode()[-2000:]
        stored_steps = 0
        async with db.transaction() as session:
            for record in records:
                events = await audit.events(session, record.id)
                completions = [e for e in events if e.kind == "status_changed"
                               and e.data.get("to") == "completed"]
                assert len(completions) == 1, f"{record.id} completed {len(completions)} times"
                assert (await audit.verify(session, record.id)).ok
                keys = [s.key for s in await steps.list_steps(session, record.id)]
                assert len(keys) == len(set(keys)) == 10
                stored_steps += len(keys)
        await db.dispose()
    assert all(r.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
               for r in records)
    # only the calls cut off by the kill were ever sent twice
    assert len(fake.requests) - stored_steps <= in_flight_at_kill
    assert any(r.attempts > 1 for r in records), "the killed worker's debates were reclaimed"


async def _wait_all(svc, ids: list[str], timeout: float):  # type: ignore[no-untyped-def]
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
