"""The scaling curve as a small PNG (matplotlib is the bench harness's own dependency,
tests/benchmarks/requirements.txt, never the product's)."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.service_bench import ServiceRun

DEFAULT_PATH = Path("docs/bench/scaling.png")


def scaling_png(runs: list[ServiceRun], path: Path, *, stamp: str) -> Path | None:
    """Calls per second and calls per CPU-second against worker processes (PostgreSQL), with the
    one-process SQLite runs as points; None when matplotlib is missing or nothing ran."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    pg = [r for r in runs if r.label.startswith("PostgreSQL")]
    lite = [r for r in runs if r.label.startswith("SQLite")]
    if not pg and not lite:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2), dpi=110)
    for axis, value, title in ((left, "calls_per_s", "LLM calls per second"),
                               (right, "calls_per_core_s", "calls per CPU-second (per core)")):
        if pg:
            axis.plot([r.workers for r in pg], [getattr(r, value) for r in pg], "o-",
                      label=f"PostgreSQL, {pg[0].debates} debates")
        for r in lite:
            axis.plot([1], [getattr(r, value)], "s", label=f"SQLite, {r.debates} debates")
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("worker processes", fontsize=8)
        axis.set_xticks([1, 2, 4])
        highest = max(getattr(r, value) for r in [*pg, *lite])
        axis.set_ylim(0, highest * 1.15)  # room above the highest point: no marker cut
        axis.grid(alpha=0.3)
        axis.tick_params(labelsize=8)
    left.legend(fontsize=7)
    fig.suptitle(f"Consensus debates at 200 ms per call ({stamp})", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
