"""Measuring other processes honestly: each child's own CPU and peak RSS (from `wait4`, not the
bench's own rusage), a live process's CPU from /proc, and a whole process tree's CPU (the
PostgreSQL server: the postmaster, its live backends, and the ones it already reaped)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Exited:
    """One finished child: wall seconds, its own CPU seconds (user + system), its own peak RSS
    (MB), its exit status and what it printed."""

    wall: float
    cpu: float
    peak_mb: float
    returncode: int
    stdout: str
    stderr: str


class Child:
    """A child process whose output goes to files and whose rusage is its own (reaped with
    `os.wait4`, so the CPU and peak RSS are this child's, not every child's summed)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str],
                 cwd: str | None = None) -> None:
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.NamedTemporaryFile(prefix="bench-", suffix=".err")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err)
        self.pid = self.proc.pid

    def stderr_so_far(self) -> str:
        return Path(self._err.name).read_text(errors="replace")

    def cpu_now(self) -> float:
        """CPU seconds used so far (user + system), read from /proc while it runs."""
        return own_cpu(self.pid)

    async def wait_for_line(self, needle: str, timeout: float) -> None:
        """Until `needle` appears on its stderr (e.g. a worker's "started" log line)."""
        deadline = time.perf_counter() + timeout
        while needle not in self.stderr_so_far():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.proc.args[:3]} exited {self.proc.returncode}:\n"
                                   f"{self.stderr_so_far()[-2000:]}")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no {needle!r} within {timeout} s")
            await asyncio.sleep(0.05)

    async def finish(self, sig: int | None = None) -> Exited:
        """Signal it (when `sig` is given), then reap it; its own rusage comes back."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        _, status, usage = await asyncio.to_thread(os.wait4, self.pid, 0)
        wall = time.perf_counter() - self.started
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self._out.seek(0)
        out = self._out.read().decode(errors="replace")
        err = self.stderr_so_far()
        self._out.close()
        self._err.close()
        return Exited(wall=wall, cpu=usage.ru_utime + usage.ru_stime,
                      peak_mb=usage.ru_maxrss / 1024, returncode=self.proc.returncode,
                      stdout=out, stderr=err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)


async def run_measured(argv: Sequence[str], *, env: Mapping[str, str],
                       cwd: str | None = None) -> Exited:
    """Run a command to its end; its wall, CPU and peak RSS."""
    return await Child(argv, env=env, cwd=cwd).finish()


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()   # fields from the 3rd on (state)


def own_cpu(pid: int) -> float:
    """User + system CPU seconds of one live process."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, of the children it has reaped, and of its live children: for a
    PostgreSQL server, every backend's CPU, whether its connection is still open or not."""
    def with_reaped(p: int) -> float:
        f = _stat(p)
        return sum(int(x) for x in f[11:15]) / TICK    # utime, stime, cutime, cstime
    total = with_reaped(pid)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
            if int(fields[1]) == pid:                   # ppid
                total += with_reaped(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue                                    # exited while we looked
    return total
