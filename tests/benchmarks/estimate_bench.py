"""Estimates against real costs: for typical and verbose replies, ten debates of each mode through
the service (SQLite, one worker) against the realistic provider simulation, each estimated just
before it is submitted (so the estimate has learned from the debates before it, as in service).
Prints, per mode, how many real costs fell inside the estimate's range (the goal: at least 9 of
10), below it, above it, and the median real cost against the typical figure."""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bot.settings import Settings
from engine.domain import DebateRequest
from engine.money.cost import usd
from engine.vocabulary import Mode
from storage.db import Database
from storage.records import Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done

DEBATES = 10
LEVELS = ("typical", "verbose")
TOPICS = ("Should we move billing to PostgreSQL?", "Should we adopt a four-day week?",
          "Should the API be versioned in the URL?", "Should we rewrite the parser in Rust?",
          "Should on-call be paid extra?", "Should we drop support for Python 3.10?",
          "Should product analytics be self-hosted?", "Should the monolith be split?",
          "Should we freeze deploys in December?", "Should code review be required for docs?")


@dataclass
class Row:
    level: str
    mode: str
    inside: int = 0
    below: int = 0
    above: int = 0
    first: str = ""
    ratios: tuple[float, ...] = ()


async def bench_mode(level: str, mode: Mode, seed: int) -> Row:
    row = Row(level, mode.value)
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}")
        await db.upgrade()
        async with FakeOpenAI(replies=level, seed=seed) as fake:
            settings = Settings(**gateway_settings(fake.base_url).model_dump(),
                                cache_ttl_seconds=0, judge_cache_ttl_seconds=0)
            svc = service(db, settings)
            async with running_worker(svc):
                for i, topic in enumerate(TOPICS[:DEBATES]):
                    svc.history.forget()  # read what the debates before this one used
                    request = DebateRequest(topic=topic, mode=mode)
                    estimate = await svc.estimate(request)
                    sub = await svc.submit(request, origin=Origin(surface="api"))
                    done = await wait_done(svc, sub.record.id, timeout=120)
                    real = done.cost_usd
                    if i == 0:
                        row.first = (f"{usd(estimate.usd_low)}–{usd(estimate.usd_high)} for "
                                     f"{usd(real)}")
                    if real < estimate.usd_low - 1e-9:
                        row.below += 1
                    elif real > estimate.usd_high + 1e-9:
                        row.above += 1
                    else:
                        row.inside += 1
                    ratios.append(real / estimate.usd if estimate.usd else 0.0)
            await svc.aclose()
        await db.dispose()
    row.ratios = tuple(ratios)
    return row


async def run() -> list[Row]:
    print(f"\nEstimates against real costs ({DEBATES} debates per mode and reply length, the "
          "default model, realistic provider simulation; each estimate made just before its "
          "debate, learning from the ones before)", flush=True)
    print(f"{'replies':<9}{'mode':<12}{'in range':>9}{'below':>7}{'above':>7}"
          f"{'real/typical':>14}  first debate (cold estimate for real cost)")
    rows = []
    for level in LEVELS:
        for n, mode in enumerate(Mode):
            row = await bench_mode(level, mode, seed=100 + n)
            rows.append(row)
            ratio = statistics.median(row.ratios) if row.ratios else 0.0
            print(f"{row.level:<9}{row.mode:<12}{row.inside:>6}/{DEBATES:<2}{row.below:>7}"
                  f"{row.above:>7}{ratio:>13.2f}x  {row.first}", flush=True)
    held = sum(r.inside for r in rows)
    print(f"In range: {held} of {len(rows) * DEBATES} debates; modes at 9 of 10 or better: "
          f"{sum(1 for r in rows if r.inside >= 9)} of {len(rows)}")
    return rows
