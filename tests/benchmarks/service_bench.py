"""Concurrent consensus debates through the whole service (queue, leases, checkpoints, audit,
budget, events) against the fake provider at 200 ms per call, writing as real models do
(`BENCH_REPLIES`, default "typical": the default model's hidden reasoning included; "minimal" for
the short replies of the figures before 2026-11-27): `dialectic worker` processes on
SQLite (one process, 200 and 1,000 debates) and on PostgreSQL (1, 2 and 4 worker processes, the
scaling curve).

Measured honestly: the debates are submitted first, then the workers start; the clock and the
CPU counters start once every worker has logged that it runs (start-up is not a debate's cost)
and stop when the last debate settles. CPU is each worker's own (from /proc), the PostgreSQL
server's (the postmaster, its backends, live and reaped), and, apart, the fake provider's; peak
RSS is each worker's own (wait4). The completion wait is one `SELECT count(*)` every half second
on a connection of the bench's own, so it does not load the service. Afterwards every audit chain
is verified."""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.service.debates import DebateService
from bot.service.providers import make_llm
from bot.settings import Settings
from engine.domain import DebateRequest
from storage import audit
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.benchmarks.cli_bench import clean_env
from tests.benchmarks.procs import Child, tree_cpu
from tests.benchmarks.proxy import Provider, arrivals, fake_provider, finishes

LATENCY = 0.2
REPLIES = os.environ.get("BENCH_REPLIES", "typical")
CALLS_PER_DEBATE = 10
SQLITE_DEBATES = tuple(int(n) for n in os.environ.get("BENCH_SQLITE_DEBATES",
                                                      "200,1000").split(",") if n)
PG_DEBATES = int(os.environ.get("BENCH_PG_DEBATES", "200"))
PG_WORKERS = tuple(int(n) for n in os.environ.get("BENCH_PG_WORKERS", "1,2,4").split(",") if n)
#: the process measured: "worker" (`dialectic worker`) or "serve" (`dialectic serve`, what
#: `make run` starts: the HTTP server, the scheduler and the workers in one process)
PROCESS = os.environ.get("BENCH_PROCESS", "worker")
#: a file to write the measured process's cProfile to (one process: the SQLite runs)
PROFILE = os.environ.get("BENCH_PROFILE", "")
#: a directory for an SVG flame graph of each measured process over its measured window
#: (py-spy, sampling from outside at 100 Hz without pausing it: a few % of one core)
FLAME = os.environ.get("BENCH_FLAME", "")
DONE = tuple(s.value for s in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW,
                               DebateStatus.FAILED, DebateStatus.TIMED_OUT))
COUNT_DONE = ("SELECT status, count(*) FROM debates WHERE status IN ("
              + ", ".join(f"'{s}'" for s in DONE) + ") GROUP BY status")
WAIT_LIMIT_S = 900.0


@dataclass
class ServiceRun:
    label: str
    debates: int
    workers: int
    wall: float = 0.0
    calls: int = 0
    cut_off: int = 0                        # replies stopped at their output cap (re-sent)
    worker_cpu: float = 0.0
    server_cpu: float = 0.0                 # PostgreSQL's (0 on SQLite: it runs in the worker)
    provider_cpu: float = 0.0
    peak_mb: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    audit_ok: bool = False
    audit_events: int = 0

    @property
    def ms_per_call(self) -> float:
        return 1000 * (self.worker_cpu + self.server_cpu) / max(self.calls, 1)

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.wall if self.wall else 0.0

    @property
    def calls_per_core_s(self) -> float:
        """Calls per CPU-second spent by the service (workers and database server)."""
        cpu = self.worker_cpu + self.server_cpu
        return self.calls / cpu if cpu else 0.0


def _settings(base_url: str, database_url: str) -> Settings:
    return Settings(openai_api_key="bench", openai_base_url=base_url, database_url=database_url,
                    daily_budget_usd=1_000_000, lease_seconds=60, call_timeout=60,
                    phase_timeout=600, debate_timeout=1200)


def worker_env(base_url: str, database_url: str) -> dict[str, str]:
    env = clean_env(base_url)
    env.update({"DATABASE_URL": database_url, "DIALECTIC_POLL_INTERVAL": "0.2",
                "DIALECTIC_LEASE_SECONDS": "60", "DIALECTIC_DAILY_BUDGET_USD": "1000000",
                "DIALECTIC_CALL_TIMEOUT": "60", "DIALECTIC_PHASE_TIMEOUT": "600",
                "DIALECTIC_DEBATE_TIMEOUT": "1200", "DIALECTIC_LOG_LEVEL": "INFO"})
    return env


def process_argv(slots: int) -> list[str]:
    """The measured process's command line (`BENCH_PROCESS`): serve on a free loopback port, or
    a worker with `slots` debates at once (serve takes them from DIALECTIC_WORKER_CONCURRENCY)."""
    python = [sys.executable, *(("-m", "cProfile", "-o", PROFILE) if PROFILE else ())]
    if PROCESS == "serve":
        return [*python, "-m", "bot", "serve", "--host", "127.0.0.1", "--port", "0"]
    return [*python, "-m", "bot", "worker", "--concurrency", str(slots)]


async def submit_all(base_url: str, database_url: str, debates: int) -> None:
    """Queue the debates (before any worker runs: submission is not what is measured)."""
    settings = _settings(base_url, database_url)
    db = Database(database_url)
    await db.upgrade()
    svc = DebateService(engine=settings.engine, settings=settings.service, db=db,
                        llm_factory=make_llm)

    async def one(i: int) -> None:
        request = DebateRequest(topic=f"Should team {i} adopt microservices from day one?",
                                mode="consensus", no_cache=True)
        await svc.submit(request, origin=Origin(surface="api"))
    for start in range(0, debates, 100):
        await asyncio.gather(*(one(i) for i in range(start, min(start + 100, debates))))
    await db.dispose()


async def verify_audit(database_url: str, run: ServiceRun) -> None:
    db = Database(database_url)
    try:
        async with db.transaction(readonly=True) as session:
            report = await audit.verify(session)
        run.audit_ok, run.audit_events = report.ok, report.events_checked
    finally:
        await db.dispose()


async def measure(run: ServiceRun, provider: Provider, database_url: str,
                  count_done: Callable[[], Awaitable[dict[str, int]]],
                  server_cpu: Callable[[], float]) -> ServiceRun:
    """Start the workers, time them from ready to the last settled debate, stop them."""
    await submit_all(provider.base_url, database_url, run.debates)
    # counted before any worker starts: the first one ready claims and calls while the others
    # are still starting (read after them, one run of four workers counted 1,996 calls of 2,000)
    calls0 = len(await arrivals(provider.base_url))
    cut0 = (await finishes(provider.base_url)).get("length", 0)
    slots = math.ceil(run.debates / run.workers)
    children = [Child(process_argv(slots), env={**worker_env(provider.base_url, database_url),
                                                "DIALECTIC_WORKER_CONCURRENCY": str(slots)})
                for _ in range(run.workers)]
    try:
        await asyncio.gather(*(c.wait_for_line(" started (", 120) for c in children))
        spies = [flame_graph(c.pid, run, i) for i, c in enumerate(children)] if FLAME else []
        t0, cpu0 = time.perf_counter(), [c.cpu_now() for c in children]
        server0, provider0 = server_cpu(), provider.cpu()
        while sum((counts := await count_done()).values()) < run.debates:
            if time.perf_counter() - t0 > WAIT_LIMIT_S:
                raise TimeoutError(f"{run.label}: only {counts} after {WAIT_LIMIT_S:.0f} s")
            await asyncio.sleep(0.5)
        run.wall = time.perf_counter() - t0
        for spy in spies:   # py-spy writes its SVG when interrupted
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            await asyncio.to_thread(spy.wait, 60)
        run.worker_cpu = sum(c.cpu_now() - before for c, before in zip(children, cpu0,
                                                                         strict=True))
        run.server_cpu = server_cpu() - server0
        run.provider_cpu = provider.cpu() - provider0
        run.calls = len(await arrivals(provider.base_url)) - calls0
        run.cut_off = (await finishes(provider.base_url)).get("length", 0) - cut0
        run.counts = counts
    finally:
        exits = await asyncio.gather(*(c.finish(signal.SIGTERM) for c in children))
    run.peak_mb = [e.peak_mb for e in exits]
    await verify_audit(database_url, run)
    return run


def flame_graph(pid: int, run: ServiceRun, index: int) -> subprocess.Popen[bytes]:
    """py-spy recording process `pid` into BENCH_FLAME (as `make bench` installs it:
    tests/benchmarks/requirements.txt); idle samples (waits) left out."""
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    slug = "-".join(run.label.lower().replace(",", "").split())
    out = os.path.join(FLAME, f"flame-{PROCESS}-{slug}-{index + 1}.svg")
    print(f"  flame graph of pid {pid}: {out}", flush=True)
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "100", "--nonblocking",
                             "--format", "flamegraph", "--output", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def sqlite_run(provider: Provider, debates: int) -> ServiceRun:
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/bench.db"

        async def count_done() -> dict[str, int]:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                return dict(conn.execute(COUNT_DONE).fetchall())
        run = ServiceRun(f"SQLite, 1 process, {debates} debates", debates, 1)
        return await measure(run, provider, f"sqlite+aiosqlite:///{path}", count_done,
                             lambda: 0.0)


async def postgres_run(provider: Provider, pg_url: str, workers: int) -> ServiceRun:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_async_engine(pg_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.exec_driver_sql(f"CREATE DATABASE {name}")
        data_dir = (await conn.exec_driver_sql("SHOW data_directory")).scalar_one()
    with open(f"{data_dir}/postmaster.pid") as f:
        postmaster = int(f.readline())
    url = pg_url.rsplit("/", 1)[0] + f"/{name}"
    watcher = create_async_engine(url, poolclass=NullPool)
    try:
        async with watcher.connect() as conn:
            async def count_done() -> dict[str, int]:
                rows = (await conn.execute(text(COUNT_DONE))).all()
                await conn.commit()
                return {str(s): int(n) for s, n in rows}
            run = ServiceRun(f"PostgreSQL, {workers} worker process{'es' * (workers > 1)}",
                             PG_DEBATES, workers)
            return await measure(run, provider, url, count_done,
                                 lambda: tree_cpu(postmaster))
    finally:
        await watcher.dispose()
        async with admin.connect() as conn:
            await conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
        await admin.dispose()


def print_header() -> None:
    print(f"\nService: concurrent consensus debates ({CALLS_PER_DEBATE} calls each, 4 dependent "
          f"rounds: ideal wall {4 * LATENCY:.1f} s), `dialectic {PROCESS}` processes, fake "
          f"provider at {LATENCY * 1000:.0f} ms in its own process, {REPLIES} replies.\nCPU/call = "
          "(workers + PostgreSQL server) / LLM calls, target <= 3 ms; cut = calls cut off at "
          "their output cap (and so sent again), target < 2 %; calls/core-s = calls per "
          "CPU-second of the service; RSS = each worker's own peak")
    print(f"{'':<36}{'wall':>8}{'calls':>7}{'cut':>7}{'calls/s':>9}{'workers':>9}{'server':>8}"
          f"{'CPU/call':>10}{'calls/core-s':>14}{'provider':>10}  {'peak RSS':<20} audit / outcome")


def print_runs(runs: list[ServiceRun]) -> None:
    for r in runs:
        cut = 100 * r.cut_off / max(r.calls, 1)
        print(f"{r.label:<36}{r.wall:>7.1f}s{r.calls:>7}{cut:>6.1f}%{r.calls_per_s:>9.0f}"
              f"{r.worker_cpu:>8.1f}s{r.server_cpu:>7.1f}s{r.ms_per_call:>8.2f}ms"
              f"{r.calls_per_core_s:>14.0f}{r.provider_cpu:>9.1f}s  "
              f"{'/'.join(f'{m:.0f}' for m in r.peak_mb) + ' MB':<20} "
              f"{'ok' if r.audit_ok else 'BROKEN'} {r.audit_events} links, {r.counts}",
              flush=True)


async def bench() -> list[ServiceRun]:
    runs: list[ServiceRun] = []
    print_header()
    async with fake_provider(LATENCY, REPLIES) as provider:
        for debates in SQLITE_DEBATES:
            runs.append(await sqlite_run(provider, debates))
            print_runs(runs[-1:])
        pg = os.environ.get("DIALECTIC_TEST_PG_URL")
        if not pg:
            print("PostgreSQL: skipped (run under scripts/with-postgres.sh, as make bench does)")
            return runs
        for workers in PG_WORKERS:
            runs.append(await postgres_run(provider, pg, workers))
            print_runs(runs[-1:])
    return runs


async def run() -> list[ServiceRun]:
    return await bench()
