"""200 concurrent consensus debates against the fake server at 200 ms latency, through the whole
service (queue, leases, checkpoints, audit, budget): on one process over SQLite, then on
PostgreSQL with two `dialectic worker` processes. Prints wall time, CPU seconds per LLM call and
peak memory; the fake server runs in its own process so its CPU is not counted."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys
import tempfile
import time
import uuid

from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.service.debates import DebateService
from bot.service.providers import make_llm
from bot.service.worker import Worker
from bot.settings import Settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.benchmarks.proxy import fake_server

DEBATES = int(os.environ.get("BENCH_DEBATES", "200"))
LATENCY = 0.2
DONE = {DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW, DebateStatus.FAILED,
        DebateStatus.TIMED_OUT}


def _settings(base_url: str, database_url: str, concurrency: int) -> Settings:
    return Settings(openai_api_key="bench", openai_base_url=base_url, database_url=database_url,
                    daily_budget_usd=1_000_000, worker_concurrency=concurrency,
                    poll_interval=0.2, lease_seconds=60, call_timeout=60,
                    phase_timeout=600, debate_timeout=1200)


async def _submit_all(svc: DebateService) -> list[str]:
    async def one(i: int) -> str:
        request = DebateRequest(topic=f"Should team {i} adopt microservices from day one?",
                                mode="consensus", no_cache=True)
        return (await svc.submit(request, origin=Origin(surface="api"))).record.id
    return list(await asyncio.gather(*(one(i) for i in range(DEBATES))))


async def _wait(svc: DebateService, ids: list[str]) -> dict[str, int]:
    while True:
        records = await svc.recent(limit=DEBATES + 10)
        statuses = [r.status for r in records if r.id in set(ids)]
        if len(statuses) == len(ids) and all(s in DONE for s in statuses):
            counts: dict[str, int] = {}
            for s in statuses:
                counts[s.value] = counts.get(s.value, 0) + 1
            return counts
        await asyncio.sleep(0.5)


async def one_process_sqlite(base_url: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = _settings(base_url, f"sqlite+aiosqlite:///{tmp}/bench.db", DEBATES)
        db = Database(settings.storage.database_url)
        await db.upgrade()
        svc = DebateService(engine=settings.engine, settings=settings.service, db=db,
                            llm_factory=make_llm)
        cpu0, t0 = time.process_time(), time.perf_counter()
        ids = await _submit_all(svc)
        stop = asyncio.Event()
        worker = Worker(svc, concurrency=DEBATES)
        task = asyncio.create_task(worker.run(stop))
        counts = await _wait(svc, ids)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        stop.set()
        await task
        await db.dispose()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"wall": wall, "cpu_per_call": cpu / (DEBATES * 10), "peak_mb": peak, "counts": counts}


async def two_workers_postgres(base_url: str, pg_url: str) -> dict[str, object]:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_async_engine(pg_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = pg_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        return await _run_two_workers(base_url, url)
    finally:
        async with admin.connect() as conn:
            await conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
        await admin.dispose()


async def _run_two_workers(base_url: str, url: str) -> dict[str, object]:
    settings = _settings(base_url, url, DEBATES // 2)
    db = Database(url)
    await db.upgrade()
    svc = DebateService(engine=settings.engine, settings=settings.service, db=db,
                            llm_factory=make_llm)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIALECTIC_"))}
    env.update({"DATABASE_URL": url, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": base_url,
                "DIALECTIC_POLL_INTERVAL": "0.2", "DIALECTIC_LEASE_SECONDS": "60",
                "DIALECTIC_DAILY_BUDGET_USD": "1000000", "DIALECTIC_LOG_LEVEL": "WARNING",
                "DIALECTIC_CONFIG": os.devnull})
    t0 = time.perf_counter()
    ids = await _submit_all(svc)
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "worker", "--concurrency", str(DEBATES // 2), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL) for _ in range(2)]
    counts = await _wait(svc, ids)
    wall = time.perf_counter() - t0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        await p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    await db.dispose()
    return {"wall": wall, "cpu_per_call": cpu / (DEBATES * 10), "peak_mb": after.ru_maxrss / 1024,
            "counts": counts}


def _line(label: str, r: dict[str, object]) -> str:
    return (f"{label:<34}{r['wall']:>8.1f} s{r['cpu_per_call'] * 1000:>10.2f} ms"
            f"{r['peak_mb']:>9.0f} MB   {r['counts']}")


async def run() -> None:
    print(f"\nService: {DEBATES} concurrent consensus debates (10 calls each, depth 4), fake "
          f"server at {LATENCY * 1000:.0f} ms in its own process; ideal wall {4 * LATENCY:.1f} s")
    print(f"{'':<34}{'wall':>10}{'CPU/call':>13}{'peak RSS':>12}   outcome")
    async with fake_server(LATENCY) as base_url:
        print(_line("one process, SQLite", await one_process_sqlite(base_url)), flush=True)
        pg = os.environ.get("DIALECTIC_TEST_PG_URL")
        if pg:
            print(_line("PostgreSQL, two worker processes",
                        await two_workers_postgres(base_url, pg)))
        else:
            print("PostgreSQL: skipped (run under scripts/with-postgres.sh, as make bench does)")
