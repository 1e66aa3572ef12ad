"""Ack latency of `/debate`: 100 concurrent signed slash commands against the real Bolt app on
loopback (FakeSlack, rehearsal model, SQLite), time from sending to the HTTP 200. Prints p50 and
p99; asserts nothing. No workers run, so the figure is the ack path alone (parse, estimate,
ack); the root messages and submissions that follow are awaited only to shut down cleanly."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from pathlib import Path

from tests.support.slack_fixtures import Harness, slack_harness

COMMANDS = 100
SEQUENTIAL = 20
CHANNELS = 10
SETTLE_TIMEOUT = 120.0


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ordered list."""
    index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
    return ordered[index]


async def _timed(h: Harness, body: str) -> tuple[float, int]:
    start = time.perf_counter()
    reply = await h.send(body, "application/x-www-form-urlencoded")
    return time.perf_counter() - start, reply.status


async def bench_acks(tmp: Path) -> dict[str, float | int]:
    async with slack_harness(tmp, workers=0) as h:
        alone = sorted([(await _timed(h, h.command_body(f"Should we warm up {i}?",
                                                         channel=f"CWARM{i}")))[0]
                        for i in range(SEQUENTIAL)])
        bodies = [h.command_body(f"Should we adopt option {i}? --mode simple",
                                 channel=f"CBENCH{i % CHANNELS}") for i in range(COMMANDS)]
        started = time.perf_counter()
        results = await asyncio.gather(*(_timed(h, body) for body in bodies))
        wall = time.perf_counter() - started
        await h.wait_until(lambda: len(h.fake.calls_to("chat.update")) >= COMMANDS + SEQUENTIAL,
                           timeout=SETTLE_TIMEOUT, what="every debate to be submitted")
        debates = len(await h.rt.service.recent(limit=COMMANDS * 2)) - SEQUENTIAL
    latencies = sorted(seconds for seconds, _ in results)
    return {"p50_ms": 1000 * percentile(latencies, 0.50),
            "p99_ms": 1000 * percentile(latencies, 0.99),
            "max_ms": 1000 * latencies[-1], "wall_s": wall,
            "alone_p50_ms": 1000 * percentile(alone, 0.50),
            "alone_p99_ms": 1000 * percentile(alone, 0.99),
            "ok": sum(1 for _, status in results if status == 200), "debates": debates}


async def run() -> None:
    logging.getLogger("dialectic").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        figures = await bench_acks(Path(tmp))
    print("\nSlack /debate ack latency (signed request -> HTTP 200 from Bolt; FakeSlack, "
          "rehearsal, SQLite; client and server share one event loop):")
    print(f"  one at a time ({SEQUENTIAL}):   p50 {figures['alone_p50_ms']:.1f} ms   "
          f"p99 {figures['alone_p99_ms']:.1f} ms")
    print(f"  {COMMANDS} concurrent:        p50 {figures['p50_ms']:.1f} ms   "
          f"p99 {figures['p99_ms']:.1f} ms   "
          f"max {figures['max_ms']:.1f} ms   all sent in {figures['wall_s']:.2f} s   "
          f"{figures['ok']}/{COMMANDS} acked, {figures['debates']} debates queued")


if __name__ == "__main__":
    asyncio.run(run())
