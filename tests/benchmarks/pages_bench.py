"""The pages a person waits on, with a year of debates stored: `dialectic serve` on SQLite with
`BENCH_PAGES_DEBATES` debates (50,000 by default: a busy team's year of digests, briefs and
reviews), each a copy of one real debate made by `dialectic run` (its 12 KB result, its
request and origin; ids, times, topics, statuses and workspaces varied), and the time from a
request to its whole answer, median and worst of `REPEATS`, for the listings, the metrics, a
debate's page and the health check. Prints figures; asserts nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from tests.benchmarks.procs import run_measured
from tests.support.served_process import ServedProcess

DEBATES = int(os.environ.get("BENCH_PAGES_DEBATES", "50000"))
REPEATS = 5
PAGES = ("/api/debates", "/api/debates?status=failed", "/", "/?status=awaiting_review",
         "/api/metrics", "/judges", "/reviews", "/healthz")
STATUSES = ("completed",) * 8 + ("failed", "awaiting_review")
TEAMS = ("T0BENCH1", "T0BENCH2", "T0BENCH3", None)


def _env(data_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "SLACK_", "DATABASE_"))}
    env.update(DIALECTIC_CONFIG=os.devnull, DIALECTIC_DATA_DIR=data_dir,
               DIALECTIC_LOG_LEVEL="WARNING")
    return env


def _grow(database: Path, count: int) -> int:
    """`count` copies of the one stored debate, newest first, five minutes apart."""
    with sqlite3.connect(database) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(debates)")]
        first = dict(zip(columns, connection.execute("SELECT * FROM debates").fetchone(),
                         strict=True))
        start = time.time()
        rows = []
        for i in range(count):
            row = dict(first)
            at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start - 300 * (i + 1)))
            origin = json.loads(first["origin"])
            origin["team_id"] = TEAMS[i % len(TEAMS)]
            row.update(id=f"bench{i:011d}", topic=f"Topic {i}: should we adopt microservices?",
                       status=STATUSES[i % len(STATUSES)], origin=json.dumps(origin),
                       idempotency_key=None, created_at=at, updated_at=at, started_at=at,
                       finished_at=at)
            rows.append(tuple(row[c] for c in columns))
        connection.executemany(f"INSERT INTO debates ({', '.join(columns)}) VALUES "
                               f"({', '.join('?' * len(columns))})", rows)
        return int(connection.execute("SELECT count(*) FROM debates").fetchone()[0])


async def _timed(session: aiohttp.ClientSession, url: str) -> tuple[int, float]:
    started = time.perf_counter()
    async with session.get(url) as response:
        await response.read()
        return response.status, time.perf_counter() - started


async def run() -> None:
    bot = [sys.executable, "-m", "bot"]
    with tempfile.TemporaryDirectory(prefix="dialectic-pages-") as data_dir:
        env = _env(data_dir)
        await run_measured([*bot, "db", "upgrade"], env=env, cwd=data_dir)
        made = await run_measured([*bot, "run", "Should we adopt microservices?", "--json"],
                                  env=env, cwd=data_dir)
        if made.returncode != 0:
            print(f"\nPages: the seed debate failed: {made.stderr[-300:]}")
            return
        database = Path(data_dir) / "dialectic.db"
        stored = _grow(database, DEBATES)
        size = database.stat().st_size / 2**20
        server = ServedProcess(env, Path(data_dir) / "serve.log")
        await server.start()
        figures: dict[str, tuple[int, list[float]]] = {}
        try:
            async with aiohttp.ClientSession() as session:
                for _ in range(REPEATS):
                    for page in PAGES:
                        status, seconds = await _timed(session, server.base + page)
                        figures.setdefault(page, (status, []))[1].append(seconds)
        finally:
            await server.terminate()
    print(f"\nPages with {stored:,} debates stored (SQLite, {size:,.0f} MB; `dialectic serve`; "
          f"request to whole answer, {REPEATS} times each):")
    for page, (status, times) in figures.items():
        print(f"  {page:<28} {status}  median {1000 * statistics.median(times):7.1f} ms  "
              f"worst {1000 * max(times):7.1f} ms")


if __name__ == "__main__":
    asyncio.run(run())
