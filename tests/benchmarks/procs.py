"""Measuring other processes honestly: each child's own CPU (from `wait4`, not the bench's own
rusage) and peak RSS (its memory's high-water mark, VmHWM, read from /proc while it runs), a live
process's CPU from /proc, and a whole process tree's CPU (the PostgreSQL server: the
postmaster, its live backends, and the ones it already reaped).

Why not `wait4`'s `ru_maxrss` for memory: Linux carries the largest resident size of the image a
process replaced at `exec` into it, and `subprocess` starts children with vfork, so a child's
`ru_maxrss` is never below the bench's own size (a `python -c pass` started from a 300 MB parent
reports 300 MB)."""

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
HWM_POLL_SECONDS = 0.01


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
        self.argv = list(argv)
        self.proc = subprocess.Popen(self.argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err)
        self.pid = self.proc.pid
        self.peak_kb = 0
        self._watch = asyncio.get_running_loop().create_task(self._watch_memory())

    def exited(self) -> bool:
        """Whether it has exited, without reaping it (`Popen.poll` would, and `wait4` then has
        no rusage to return)."""
        try:
            state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return state is not None

    def _read_hwm(self) -> None:
        hwm = high_water_kb(self.pid)
        if hwm is not None:
            self.peak_kb = max(self.peak_kb, hwm)

    async def _watch_memory(self) -> None:
        """The high-water mark, every 10 ms until the process exits (a peak reached in its last
        10 ms may be missed: memory is the one figure sampled)."""
        while not self.exited():
            self._read_hwm()
            await asyncio.sleep(HWM_POLL_SECONDS)

    def stderr_so_far(self) -> str:
        return Path(self._err.name).read_text(errors="replace")

    def cpu_now(self) -> float:
        """CPU seconds used so far (user + system), read from /proc while it runs."""
        return own_cpu(self.pid)

    async def wait_for_line(self, needle: str, timeout: float) -> None:
        """Until `needle` appears on its stderr (e.g. a worker's "started" log line)."""
        deadline = time.perf_counter() + timeout
        while needle not in self.stderr_so_far():
            if self.exited():
                raise RuntimeError(f"{self.argv[:3]} exited:\n"
                                   f"{self.stderr_so_far()[-2000:]}")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no {needle!r} within {timeout} s")
            await asyncio.sleep(0.05)

    async def finish(self, sig: int | None = None) -> Exited:
        """Signal it (when `sig` is given), then reap it; its own rusage comes back."""
        self._read_hwm()
        if sig is not None and not self.exited():
            self.proc.send_signal(sig)
        _, status, usage = await asyncio.to_thread(os.wait4, self.pid, 0)
        self._watch.cancel()
        wall = time.perf_counter() - self.started
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self._out.seek(0)
        out = self._out.read().decode(errors="replace")
        err = self.stderr_so_far()
        self._out.close()
        self._err.close()
        return Exited(wall=wall, cpu=usage.ru_utime + usage.ru_stime,
                      peak_mb=self.peak_kb / 1024, returncode=self.proc.returncode,
                      stdout=out, stderr=err)

    def kill(self) -> None:
        if not self.exited():
            self.proc.send_signal(signal.SIGKILL)


async def run_measured(argv: Sequence[str], *, env: Mapping[str, str],
                       cwd: str | None = None) -> Exited:
    """Run a command to its end; its wall, CPU and peak RSS."""
    return await Child(argv, env=env, cwd=cwd).finish()


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()   # fields from the 3rd on (state)


def high_water_kb(pid: int) -> int | None:
    """A live process's peak resident memory so far (VmHWM, kB); None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None   # a zombie has no memory left to report


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
