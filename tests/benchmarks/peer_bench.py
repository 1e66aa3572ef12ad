"""Side by side with mutual-dissent 0.3.1 (panel -> reflection -> synthesis), same shape: three
panelists, R reflection rounds, one synthesizer; same fake provider; runs interleaved.

The peer is installed into a throwaway venv of its own (never a dependency of Dialectic): from
PyPI, or from `BENCH_PEER_SOURCE` (a local checkout or sdist of 0.3.1) when PyPI does not have it.
Its provider URL is a constant (OpenRouter's), so a small launcher points it, and its pricing
prefetch, at the fake provider and turns off its background PyPI version check: no request of the
bench leaves the machine. Both tools are measured the same way: the whole process (wall, CPU,
peak RSS, from wait4) and the provider window (first request's arrival to last reply). The fake
answers as the service section's does (`BENCH_REPLIES`, default "typical": replies as long as
real models write them; "minimal" for the short replies of the figures before 2026-11-27)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.cli_bench import TOPIC, clean_env, dialectic
from tests.benchmarks.procs import Exited, run_measured
from tests.benchmarks.proxy import Provider, arrivals, dependent_rounds, fake_provider
from tests.benchmarks.service_bench import REPLIES

PEER = "mutual-dissent==0.3.1"
ROUNDS = (1, 2)
#: (latency, interleaved pairs)
LATENCIES: tuple[tuple[float, int], ...] = ((0.2, 3), (1.0, 2))
LAUNCHER = """
import sys
url, argv = sys.argv[1], sys.argv[2:]
import mutual_dissent.pricing as pricing
import mutual_dissent.providers.openrouter as openrouter
openrouter.OPENROUTER_API_URL = url + "/chat/completions"
pricing.OPENROUTER_MODELS_URL = url + "/models"
import mutual_dissent.cli as cli
cli._check_for_update = lambda package: None
sys.argv = ["dissent", *argv]
cli.main()
"""


def install_peer(venv: Path) -> str | None:
    """A venv with the peer in it; None when it installed, else why not (one line)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check"]
    found = subprocess.run([*pip, PEER], capture_output=True, text=True)
    if found.returncode == 0:
        return None
    source = os.environ.get("BENCH_PEER_SOURCE")
    if source:
        local = subprocess.run([*pip, source], capture_output=True, text=True)
        if local.returncode == 0:
            return None
        return f"{PEER} is not on the package index, and {source} did not install: " + \
            (local.stderr.strip().splitlines() or ["?"])[-1]
    last = (found.stderr.strip().splitlines() or ["?"])[-1]
    return (f"{PEER} could not be installed ({last}); set BENCH_PEER_SOURCE to a checkout of "
            "its v0.3.1 tag to measure it")


@dataclass(frozen=True, slots=True)
class Measured:
    tool: str
    rounds: int
    latency: float
    proc: Exited
    window: float
    depth: int
    calls: int


async def _measure(tool: str, argv: list[str], env: dict[str, str], provider: Provider,
                   rounds: int, cwd: str) -> Measured:
    before = len(await arrivals(provider.base_url))
    proc = await run_measured(argv, env=env, cwd=cwd)
    seen = (await arrivals(provider.base_url))[before:]
    window = max(seen) - min(seen) + provider.latency if seen else float("nan")
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{tool} exited {proc.returncode}: {proc.stderr[-800:]}")
    return Measured(tool, rounds, provider.latency, proc, window,
                    dependent_rounds(seen, provider.latency), len(seen))


async def bench_pair(peer_python: str, provider: Provider, rounds: int, home: str
                     ) -> tuple[Measured, Measured]:
    ours = [*dialectic(), "run", TOPIC, "--mode", "panel", "--rounds", str(rounds), "--json"]
    env = clean_env(provider.base_url)
    a = await _measure("dialectic", ours, env, provider, rounds, home)
    theirs = [peer_python, "-c", LAUNCHER, provider.base_url, "ask", TOPIC, "--panel",
              "claude,gpt,gemini", "--synthesizer", "claude", "--rounds", str(rounds),
              "--no-save", "--output", "json"]
    peer_env = {**clean_env(None), "HOME": home, "OPENROUTER_API_KEY": "bench"}
    b = await _measure("mutual-dissent", theirs, peer_env, provider, rounds, home)
    return a, b


async def bench() -> tuple[list[Measured], str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        why_not = install_peer(Path(tmp) / "peer")
        if why_not is not None:
            return [], why_not
        peer_python = str(Path(tmp) / "peer" / "bin" / "python")
        rows: list[Measured] = []
        for latency, pairs in LATENCIES:
            async with fake_provider(latency, REPLIES) as provider:
                for _ in range(pairs):
                    for rounds in ROUNDS:
                        rows.extend(await bench_pair(peer_python, provider, rounds, tmp))
        return rows, None


def print_rows(rows: list[Measured], why_not: str | None) -> None:
    print("\nSide by side with mutual-dissent 0.3.1: 3 panelists, R reflection rounds, one "
          f"synthesizer, same fake provider ({REPLIES} replies), interleaved (ranges over the "
          "runs);\nin-debate = "
          "provider window (first arrival to last reply), ratio = in-debate / (rounds x "
          "latency), target <= 1.04; whole wall target <= in-debate + 0.3 s")
    if why_not is not None:
        print(f"  peer not measured: {why_not}")
        print("  (issue 13 measured it on this machine: at 1 s per call 1.04-1.08x and whole "
              "processes of 3.6-5.9 s; at 200 ms 1.2-1.8 s)")
        return
    print(f"{'latency':>8} {'R':>2} {'tool':<15}{'rounds':>7}{'calls':>6}{'ratio':>14}"
          f"{'whole wall':>16}{'wall - in-debate':>20}{'CPU':>14}{'peak RSS':>10}")
    for latency, _ in LATENCIES:
        for rounds in ROUNDS:
            for tool in ("dialectic", "mutual-dissent"):
                chosen = [m for m in rows if (m.tool, m.rounds, m.latency) == (tool, rounds,
                                                                               latency)]
                if not chosen:
                    continue
                ratio = [m.window / (m.depth * latency) for m in chosen]
                walls = [m.proc.wall for m in chosen]
                over = [m.proc.wall - m.window for m in chosen]
                cpu = [m.proc.cpu for m in chosen]
                print(f"{latency * 1000:>6.0f}ms {rounds:>2} {tool:<15}{chosen[0].depth:>7}"
                      f"{chosen[0].calls:>6}{_span(ratio, 3):>14}{_span(walls, 2, 's'):>16}"
                      f"{_span(over, 2, 's'):>20}{_span(cpu, 2, 's'):>14}"
                      f"{statistics.median([m.proc.peak_mb for m in chosen]):>8.0f}MB")


def _span(values: list[float], digits: int, unit: str = "") -> str:
    low, high = min(values), max(values)
    if round(low, digits) == round(high, digits):
        return f"{low:.{digits}f}{unit}"
    return f"{low:.{digits}f}-{high:.{digits}f}{unit}"


async def run() -> None:
    rows, why_not = await bench()
    print_rows(rows, why_not)
