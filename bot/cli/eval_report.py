"""An evaluation report in the terminal (a table, the normalisation, the readings) and as a PNG
plot (accuracy against cost per question, one point per mode)."""

from __future__ import annotations

import pathlib
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from engine.evaluation.report import Report, reading

PLOT_EXTRA = "pip install 'dialectic[plot]'"


def print_report(report: Report, console: Console) -> None:
    table = Table(title=f"{report.dataset} ({report.source})", title_justify="left")
    for name in ("mode", "n", "accuracy", "95% interval", "$/question", "calls", "tokens",
                 "seconds", "ties", "errors"):
        table.add_column(name, justify="left" if name == "mode" else "right")
    for m in report.modes:
        table.add_row(Text(m.mode), str(m.n), f"{m.accuracy:.1%}",
                      f"[{m.interval[0]:.2f}, {m.interval[1]:.2f}]", f"${m.cost_usd:.4f}",
                      f"{m.calls:.1f}", f"{m.tokens:,.0f}", f"{m.seconds:.1f}", str(m.ties),
                      str(m.errors))
    console.print(table)
    for c in report.comparisons:
        console.print(Text(f"{c.mode} vs {c.against}: {c.paired.diff * 100:+.1f} points "
                           f"[{c.paired.low * 100:.1f}, {c.paired.high * 100:.1f}], "
                           f"McNemar p={c.paired.p_value:.3g} (b={c.paired.b}, c={c.paired.c})"))
    for line in reading(report):
        console.print(Text(line))
    console.print(Text(report.normalisation, style="dim"))
    if not report.complete:
        console.print(Text("INCOMPLETE: " + "; ".join(report.missing), style="bold yellow"))


def write_plot(report: Report, path: pathlib.Path) -> None:
    """Raises RuntimeError (one line) when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(f"the plot needs matplotlib: {PLOT_EXTRA}") from None
    figure: Any
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for m in report.modes:
        cost = max(m.cost_usd, 1e-9)
        axes.errorbar([cost], [m.accuracy], yerr=[[m.accuracy - m.interval[0]],
                                                  [m.interval[1] - m.accuracy]],
                      fmt="o", capsize=4, label=m.mode)
        axes.annotate(m.mode, (cost, m.accuracy), textcoords="offset points", xytext=(6, 6))
    axes.set_xscale("log")
    axes.set_xlabel("cost per question (USD, log scale)")
    axes.set_ylabel("accuracy (Wilson 95% interval)")
    axes.set_ylim(0, 1)
    axes.set_title(report.dataset)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
