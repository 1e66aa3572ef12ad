"""Whole `dialectic` processes, cold, as a person runs them: start-up (`--help`, `presets`), and
`dialectic run` in every mode against the fake provider at 0 ms, 200 ms and 1 s per call.

For each run: the process's wall, CPU and peak RSS (its own, from wait4); the debate's own time
(the result's `elapsed_seconds`); the dependent rounds the provider saw; the in-debate ratio
(debate time / (rounds x latency)); the process overhead (wall - debate time: start-up, preparing,
printing); and the phases' times, to show the first-call tax (the first phase against the later
ones). Nothing here asserts a time.

The processes are the runtime-only install's (`BENCH_RUNTIME_PYTHON`, the venv `make bench` builds
as `make run` installs: no test or lint tools), since the development venv's tools change a run's
start: selenium brings trio, which the SDK's HTTP transport (httpcore2) imports whenever it is
installed. The development venv's start-ups at 0 ms are measured too, labelled as such."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from engine.protocols import PROTOCOLS
from tests.benchmarks.procs import Exited, run_measured
from tests.benchmarks.proxy import Provider, arrivals, dependent_rounds, fake_provider

TOPIC = "Should a startup adopt microservices from day one?"
OPTIONS: dict[str, list[str]] = {"simple": ["--rounds", "1"], "panel": ["--rounds", "1"],
                                 "critique": ["--rounds", "2"]}
#: (latency, runs of each mode): the 1 s runs are fewer, to keep `make bench` reasonable
LATENCIES: tuple[tuple[float, int], ...] = ((0.0, 3), (0.2, 2), (1.0, 1))
STARTUP_RUNS = 5


def runtime_python() -> str:
    """The runtime-only install's interpreter (`BENCH_RUNTIME_PYTHON`), else this one."""
    found = os.environ.get("BENCH_RUNTIME_PYTHON")
    return str(Path(found).absolute()) if found else sys.executable


def dialectic(python: str | None = None) -> list[str]:
    """The installed `dialectic` script (what a person types) of `python`'s venv (the runtime
    install's unless told), else `python -m bot`."""
    python = python or runtime_python()
    script = Path(python).parent / "dialectic"
    return [str(script)] if script.exists() else [python, "-m", "bot"]


#: Where the benched runs store their debates (a run is a stored debate): never the user's own
#: database, and one made before the first measured run (`db upgrade`), as after a first run.
DATA_DIR = tempfile.mkdtemp(prefix="dialectic-bench-")


def clean_env(base_url: str | None, data_dir: str = DATA_DIR) -> dict[str, str]:
    """This environment without any provider or Dialectic setting, plus the fake provider's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "DATABASE_", "SLACK_"))}
    env["DIALECTIC_CONFIG"] = os.devnull
    env["DIALECTIC_DATA_DIR"] = data_dir
    if base_url is not None:
        env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=base_url)
    return env


@dataclass
class Run:
    """One `dialectic run` process."""

    mode: str
    latency: float
    proc: Exited
    debate_s: float = 0.0
    window_s: float = 0.0
    depth: int = 0
    calls: int = 0
    status: str = ""
    phases: list[tuple[str, float]] = field(default_factory=list)

    @property
    def overhead(self) -> float:
        return self.proc.wall - self.debate_s

    @property
    def ratio(self) -> float | None:
        return self.debate_s / (self.depth * self.latency) if self.latency and self.depth else None


async def run_once(provider: Provider, mode: str, cwd: str, python: str | None = None,
                   data_dir: str = DATA_DIR) -> Run:
    before = len(await arrivals(provider.base_url))
    argv = [*dialectic(python), "run", TOPIC, "--mode", mode, *OPTIONS.get(mode, []), "--json"]
    proc = await run_measured(argv, env=clean_env(provider.base_url, data_dir), cwd=cwd)
    seen = (await arrivals(provider.base_url))[before:]
    run = Run(mode=mode, latency=provider.latency, proc=proc, calls=len(seen))
    if provider.latency:
        run.depth = dependent_rounds(seen, provider.latency)
        run.window_s = max(seen) - min(seen) + provider.latency if seen else 0.0
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        run.status = f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
        return run
    run.debate_s = float(result["elapsed_seconds"])
    run.status = result["status"]
    run.phases = [(p["name"], float(p["elapsed_seconds"])) for p in result["phases"]]
    return run


async def bench_runs() -> list[Run]:
    """Every mode at every latency, modes interleaved within each repeat."""
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as cwd:
        await run_measured([*dialectic(), "db", "upgrade"], env=clean_env(None), cwd=cwd)
        for latency, repeats in LATENCIES:
            async with fake_provider(latency) as provider:
                for _ in range(repeats):
                    for mode in PROTOCOLS:
                        runs.append(await run_once(provider, mode, cwd))
    return runs


async def bench_startup() -> dict[str, float]:
    """Median walls: the interpreter alone, `import openai` alone (the SDK's own floor, which
    every `run` pays), `dialectic --help` and `dialectic presets`."""
    figures: dict[str, float] = {}
    python = runtime_python()
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import openai'": [python, "-c", "import openai"],
        "dialectic --help": [*dialectic(), "--help"],
        "dialectic presets": [*dialectic(), "presets"],
    }
    with tempfile.TemporaryDirectory() as cwd:
        for label, argv in commands.items():
            walls = [(await run_measured(argv, env=clean_env(None), cwd=cwd)).wall
                     for _ in range(STARTUP_RUNS)]
            figures[label] = statistics.median(walls)
    return figures


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def first_phase_tax(runs: list[Run], mode: str = "consensus") -> list[str]:
    """The first phase against the later ones (each of the mode's phases is one round)."""
    lines = []
    for latency, _ in LATENCIES:
        chosen = [r for r in runs if r.mode == mode and r.latency == latency and r.phases]
        if not chosen:
            continue
        first = _median([r.phases[0][1] for r in chosen])
        later = _median([t for r in chosen for _, t in r.phases[1:]])
        names = ", ".join(f"{n} {_median([r.phases[i][1] for r in chosen]):.3f}"
                          for i, (n, _) in enumerate(chosen[0].phases))
        lines.append(f"  {latency * 1000:>5.0f} ms: {names} s; first - later "
                     f"{(first - later) * 1000:+.0f} ms ({first / later:.2f}x)" if later else "")
    return lines


def print_runs(startup: dict[str, float], runs: list[Run]) -> None:
    print("\nStart-up, whole processes, median of "
          f"{STARTUP_RUNS} (targets: --help <= 0.35 s):")
    for label, wall in startup.items():
        print(f"  {label:<28}{wall:>7.3f} s")
    print("\n`dialectic run --json`, whole cold processes against the fake provider (medians); "
          "debate = the result's elapsed_seconds;\nratio = debate / (rounds x latency), target "
          "<= 1.04; overhead = wall - debate, target <= 0.3 s; at 0 ms, wall target <= 0.6 s "
          "(consensus)")
    print(f"{'latency':>8} {'mode':<11}{'rounds':>7}{'calls':>6}{'debate':>9}{'ratio':>7}"
          f"{'wall':>8}{'overhead':>10}{'CPU':>8}{'peak RSS':>10}  status")
    for latency, _ in LATENCIES:
        for mode in PROTOCOLS:
            chosen = [r for r in runs if r.mode == mode and r.latency == latency]
            if not chosen:
                continue
            ratios = [r.ratio for r in chosen if r.ratio is not None]
            ratio = f"{_median(ratios):>7.3f}" if ratios else f"{'-':>7}"
            statuses = sorted({r.status for r in chosen})
            print(f"{latency * 1000:>6.0f}ms {mode:<11}{max(r.depth for r in chosen) or '-':>7}"
                  f"{chosen[0].calls:>6}{_median([r.debate_s for r in chosen]):>8.3f}s{ratio}"
                  f"{_median([r.proc.wall for r in chosen]):>7.2f}s"
                  f"{_median([r.overhead for r in chosen]):>9.2f}s"
                  f"{_median([r.proc.cpu for r in chosen]):>7.2f}s"
                  f"{max(r.proc.peak_mb for r in chosen):>8.0f}MB  {', '.join(statuses)}")
    print("First-call tax (consensus: four one-round phases, median per phase):")
    for line in first_phase_tax(runs):
        print(line)


#: runs of each mode (and of `import openai`) at 0 ms in each install, interleaved
INSTALL_RUNS = 3


async def bench_installs() -> dict[str, dict[str, list[float]]]:
    """At 0 ms, interleaved: `import openai`'s wall and each mode's overhead, in the runtime-only
    install and in the development venv (this interpreter's). Each install has a data directory
    of its own, made by a first run: the day's prices kept there are stamped with the installed
    price library's file, which differs between the two venvs."""
    installs = {"runtime only": runtime_python(), "development": sys.executable}
    found: dict[str, dict[str, list[float]]] = {name: {} for name in installs}
    with tempfile.TemporaryDirectory() as cwd:
        homes = {name: tempfile.mkdtemp(prefix="dialectic-bench-", dir=cwd) for name in installs}
        async with fake_provider(0.0) as provider:
            for name, python in installs.items():
                await run_once(provider, "simple", cwd, python, homes[name])
            for _ in range(INSTALL_RUNS):
                for name, python in installs.items():
                    openai = await run_measured([python, "-c", "import openai"],
                                                env=clean_env(None), cwd=cwd)
                    found[name].setdefault("import openai", []).append(openai.wall)
                    for mode in PROTOCOLS:
                        done = await run_once(provider, mode, cwd, python, homes[name])
                        found[name].setdefault(mode, []).append(done.overhead)
    return found


def print_installs(found: dict[str, dict[str, list[float]]]) -> None:
    print(f"\nBy install, at 0 ms (medians of {INSTALL_RUNS}, interleaved): `run --json` "
          "overhead - `import openai` (target <= 0.3 s)")
    for name, rows in found.items():
        openai = _median(rows["import openai"])
        modes = "  ".join(f"{mode} {_median(rows[mode]) - openai:+.2f}"
                          for mode in PROTOCOLS if mode in rows)
        print(f"  {name:<13} import openai {openai:.3f} s;  {modes} s")


async def run() -> None:
    startup = await bench_startup()
    runs = await bench_runs()
    print(f"\nInstall measured: {runtime_python()}"
          + (" (runtime only)" if runtime_python() != sys.executable else
             " (this venv: set BENCH_RUNTIME_PYTHON, as `make bench` does, for the runtime "
             "install)"))
    print_runs(startup, runs)
    if runtime_python() != sys.executable:
        print_installs(await bench_installs())
