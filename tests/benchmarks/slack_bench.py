"""Ack latency of `/debate`, measured as Slack sees it: a real `dialectic serve` process (HTTP
mode; SQLite, and PostgreSQL when `DIALECTIC_TEST_PG_URL` is set) with its worker, the fake
Slack Web API and the fake provider in this process, and the load generator in a process of its
own (tests/benchmarks/slack_load.py: signed slash commands, the time from sending a request to
its HTTP 200; `BENCH_SLACK_CLIENT=aiohttp` for the sender used before 2026-11-28). 20 commands
one at a time, then 100 at once; p50/p95/p99/max and the machine's load with each.
`BENCH_SLACK_BEFORE=/path/to/other/tree` serves that tree too, interleaved with this one
(`BENCH_SLACK_ROUNDS` rounds, 2 by default). Prints figures; asserts nothing. The streaming half
of the section (50 debates' plans against the rate-limited fake) is slack_stream_bench;
`BENCH_SLACK_PARTS=acks` or `stream` runs one half."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack
from tests.support.served_process import ServedProcess, serve_env
from tests.support.storage_fixtures import admin_sql

BURST = 100
SERIAL = 20
CHANNELS = 10
SECRET = "bench-signing-secret"
SETTLE_TIMEOUT = 180.0
ROUNDS = int(os.environ.get("BENCH_SLACK_ROUNDS", "2"))
#: the load generator's sender: "raw" (asyncio streams) or "aiohttp" (a ClientSession a request,
#: whose own set-up, 100 at once on one event loop, was counted in every ack until 2026-11-28)
CLIENT = os.environ.get("BENCH_SLACK_CLIENT", "raw")
#: a directory: py-spy samples the served process during each burst into it (BENCH_FLAME)
FLAME = os.environ.get("BENCH_FLAME", "")
HERE = Path(__file__).resolve().parents[2]
SERVE_SETTINGS = {"DIALECTIC_LOG_LEVEL": "WARNING", "DIALECTIC_DAILY_BUDGET_USD": "100",
                  "DIALECTIC_SLACK_STREAMING": "off", "DIALECTIC_POLL_INTERVAL": "0.2",
                  "DIALECTIC_CALL_TIMEOUT": "10"}


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ordered list."""
    index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
    return ordered[index]


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used (Linux's /proc): its threads' schedstat, to the
    nanosecond (the clock ticks of /proc/PID/stat, 10 ms, were 0.1 ms an ack in a burst of 100);
    the ticks where schedstat is not kept."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):   # a thread that just ended
                continue
        return total / 1e9
    except (FileNotFoundError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Burst:
    seconds: list[float]
    ok: int
    load: float
    cpu: float = 0.0   # the served process's CPU seconds while the generator sent and read

    def line(self) -> str:
        ms = sorted(1000 * s for s in self.seconds)
        return (f"p50 {percentile(ms, .5):6.1f}  p95 {percentile(ms, .95):6.1f}  "
                f"p99 {percentile(ms, .99):6.1f}  max {ms[-1]:6.1f} ms  "
                f"{self.ok}/{len(ms)} acked  load {self.load:.1f}  "
                f"server CPU {1000 * self.cpu / len(ms):.3f} ms/ack")


async def load(base: str, *, count: int, burst: bool, tag: str, slack: FakeSlack,
               pid: int) -> Burst:
    """The load generator, a process of its own; its JSON line read back, with the CPU time the
    served process `pid` used from the generator's "ready" (its requests built) to its result (the
    work of debates still running from before, and any post-ack work done by then, included)."""
    argv = [sys.executable, "-m", "tests.benchmarks.slack_load", base, SECRET, "--team",
            slack.team_id, "--count", str(count), "--channels", str(CHANNELS), "--tag", tag,
            "--response-url", slack.response_url(""), "--client", CLIENT]
    if burst:
        argv.append("--burst")
    proc = await asyncio.create_subprocess_exec(*argv, cwd=str(HERE),
                                                stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    while (await proc.stdout.readline()).strip() not in (b"ready", b""):
        pass
    cpu = cpu_seconds(pid)
    out = await proc.stdout.readline()   # printed once its last answer is in
    cpu = cpu_seconds(pid) - cpu
    await proc.wait()
    found = json.loads(out.decode().strip().splitlines()[-1])
    return Burst(found["seconds"], sum(1 for s in found["statuses"] if s == 200),
                 os.getloadavg()[0], cpu)


async def _started(slack: FakeSlack, tag: str, count: int) -> int:
    """How many of the tagged debates got their "started" message (submitted), waiting up to
    SETTLE_TIMEOUT for all of them."""
    deadline = time.monotonic() + SETTLE_TIMEOUT

    def done() -> int:
        return sum(1 for c in slack.calls_to("chat.update") if f"{tag}-" in json.dumps(c.args))

    while done() < count and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    return done()


async def one_run(tree: Path, database_url: str, slack: FakeSlack, provider: FakeOpenAI,
                  tmp: Path, label: str) -> tuple[Burst, Burst, int]:
    env = serve_env(database_url, provider.base_url, **SERVE_SETTINGS,
                    SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=slack.base_url)
    server = ServedProcess(env, tmp / f"serve-{label}.log", cwd=tree)
    await server.start()
    assert server.process is not None
    pid = server.process.pid
    try:
        tag = uuid.uuid4().hex[:6]
        serial = await load(server.base, count=SERIAL, burst=False, tag=f"s{tag}", slack=slack,
                            pid=pid)
        await _started(slack, f"s{tag}", SERIAL)
        spy = flame_graph(pid, label) if FLAME else None
        burst = await load(server.base, count=BURST, burst=True, tag=f"b{tag}", slack=slack,
                           pid=pid)
        if spy is not None:   # py-spy writes its file when interrupted
            spy.send_signal(signal.SIGINT)
            await asyncio.to_thread(spy.wait, 60)
        started = await _started(slack, f"b{tag}", BURST)
    finally:
        await server.terminate()
    return serial, burst, started


def flame_graph(pid: int, label: str) -> subprocess.Popen[bytes]:
    """py-spy (as `make bench` installs it) sampling process `pid` during a burst, at 1000 Hz,
    into BENCH_FLAME as collapsed stacks (`--format raw`: sum them per function with any tool);
    idle samples left out."""
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    out = os.path.join(FLAME, f"slack-burst-{label}.txt")
    print(f"  py-spy of pid {pid} during the burst: {out}", flush=True)
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "1000", "--nonblocking",
                             "--format", "raw", "--output", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _postgres(url: str) -> str:
    name = f"bench_slack_{uuid.uuid4().hex[:8]}"
    await admin_sql(url, f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + f"/{name}"


async def bench_acks() -> None:
    trees = [("after", HERE)]
    before = os.environ.get("BENCH_SLACK_BEFORE")
    if before:
        trees.insert(0, ("before", Path(before).resolve()))
    pg = os.environ.get("DIALECTIC_TEST_PG_URL")
    print(f"\nSlack /debate ack (signed request sent -> HTTP 200 received; `dialectic serve` "
          f"with its worker, load generator in its own process; {SERIAL} one at a time, then "
          f"{BURST} at once over {CHANNELS} channels; sender {CLIENT}):", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-slack.") as tmp:
        async with FakeSlack() as slack, FakeOpenAI(latency=0.2) as provider:
            for round_ in range(ROUNDS):
                for name, tree in trees:
                    databases = [("SQLite", f"sqlite+aiosqlite:///{tmp}/{name}{round_}.db")]
                    if pg and round_ == 0:
                        databases.append(("PostgreSQL", await _postgres(pg)))
                    for db_name, url in databases:
                        serial, burst, started = await one_run(
                            tree, url, slack, provider, Path(tmp), f"{name}{round_}{db_name}")
                        print(f"  {name:6} {db_name:10} round {round_ + 1}  one at a time: "
                              f"{serial.line()}", flush=True)
                        print(f"  {'':6} {'':10}          {BURST} at once:   {burst.line()}; "
                              f"{started}/{BURST} started", flush=True)


async def run() -> None:
    logging.getLogger("dialectic").setLevel(logging.WARNING)
    await bench_acks()


if __name__ == "__main__":
    asyncio.run(run())
