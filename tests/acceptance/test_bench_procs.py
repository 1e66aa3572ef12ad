"""The bench's process measurements are each child's own: a child's peak memory is not the
bench's (Linux carries the parent's high-water mark into a vforked child's `ru_maxrss`), its
CPU and exit status come from reaping it, and a signalled child is still measured."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys

from tests.benchmarks.procs import Child, run_measured

ALLOCATE = ("import time\nx = bytearray({mb} * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
            "time.sleep({sleep})")


def own_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_small_child_of_a_large_parent_reports_its_own_peak() -> None:
    ballast = bytearray(160 * 2**20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    assert own_peak_mb() > 150
    small = await run_measured([sys.executable, "-S", "-c", "pass"], env=os.environ)
    large = await run_measured([sys.executable, "-S", "-c", ALLOCATE.format(mb=90, sleep=0.1)],
                               env=os.environ)
    del ballast
    assert small.returncode == 0 and 0 < small.peak_mb < 60
    assert large.returncode == 0 and 90 <= large.peak_mb < 150
    assert large.cpu > 0


async def test_a_signalled_child_is_reaped_with_its_figures() -> None:
    child = Child([sys.executable, "-S", "-c", ALLOCATE.format(mb=40, sleep=30)], env=os.environ)
    await child.wait_for_line("", timeout=5)
    async with asyncio.timeout(10):
        while child.peak_kb < 40 * 1024:      # until it has touched its memory
            await asyncio.sleep(0.01)
    assert not child.exited()
    done = await child.finish(signal.SIGTERM)
    assert done.returncode == -signal.SIGTERM and done.peak_mb >= 40
    assert child.exited()
