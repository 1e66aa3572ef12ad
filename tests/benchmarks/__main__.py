"""Runs every benchmark and prints the figures (with the date and the machine)."""

from __future__ import annotations

import asyncio
import os
import platform
import sys
from datetime import UTC, datetime

from tests.benchmarks import engine_bench


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}"


async def main() -> int:
    print(f"Dialectic benchmarks — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC — {machine()}")
    engine_bench.print_modes(await engine_bench.bench_modes())
    only = set(sys.argv[1:])
    for name in ("service_bench", "slack_bench"):
        if only and name not in only:
            continue
        try:
            module = __import__(f"tests.benchmarks.{name}", fromlist=["run"])
        except ModuleNotFoundError:
            continue
        await module.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
