"""Runs every benchmark and prints the figures (with the date and the machine); writes the
scaling plot. `python -m tests.benchmarks [section ...]` runs only the named sections:
engine, floor, cli, peer, service, slack, estimates, tracing, pages."""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.benchmarks import (
    cli_bench,
    engine_bench,
    estimate_bench,
    floor_bench,
    pages_bench,
    peer_bench,
    plot,
    service_bench,
    slack_bench,
    slack_stream_bench,
    tracing_bench,
)

SECTIONS = ("engine", "floor", "cli", "peer", "service", "slack", "estimates", "tracing",
            "pages")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}, "
            f"load {load:.1f} at start")


async def main(argv: list[str]) -> int:
    chosen = [s for s in SECTIONS if not argv or s in argv]
    stamp = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    print(f"Dialectic benchmarks — {stamp} — {machine()}", flush=True)
    if "engine" in chosen:
        engine_bench.print_modes(await engine_bench.bench_modes())
    if "floor" in chosen:
        await floor_bench.run()
    if "cli" in chosen:
        await cli_bench.run()
    if "peer" in chosen:
        await peer_bench.run()
    if "service" in chosen:
        runs = await service_bench.run()
        png = plot.scaling_png(runs, Path(os.environ.get("BENCH_PLOT", plot.DEFAULT_PATH)),
                               stamp=stamp)
        print(f"\nScaling plot: {png}" if png else "\nScaling plot: not written (matplotlib "
              "missing: pip install -r tests/benchmarks/requirements.txt)")
    if "slack" in chosen:
        # the fake Slack and provider answer from this process: what the sections before left
        # (the floor's debates, matplotlib) is not walked by its collector during the bursts
        gc.collect()
        gc.freeze()
        parts = os.environ.get("BENCH_SLACK_PARTS", "acks,stream")
        if "acks" in parts:
            await slack_bench.run()
        if "stream" in parts:
            await slack_stream_bench.run()
    if "estimates" in chosen:
        await estimate_bench.run()
    if "tracing" in chosen:
        await tracing_bench.run()
    if "pages" in chosen:
        await pages_bench.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
