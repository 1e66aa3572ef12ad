"""An evaluation's report in the terminal and as a picture: `dialectic eval` and `eval show`.

`print_report` prints a table of the modes (accuracy with its Wilson interval, what an answer
costs), a table of the paired comparisons, the normalisation, the readings, and says plainly when
the report is partial, a rehearsal, or has items that got no answer. Every text from a dataset or
a model is printed as text, never as rich markup. `write_plot` draws accuracy against cost per
question, one point per mode with its interval, with matplotlib (the `plot` extra, imported only
here and only when a plot is asked for).
"""

from __future__ import annotations

import io
import pathlib
from typing import Any

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from bot.cli.outcomes import print_line
from bot.cli.plot_file import check_target, plot_format, write_target
from engine.errors import ConfigurationError
from engine.evaluation.report import Comparison, ModeSummary, Report, reading
from engine.money.cost import usd, usd_decimals

PLOT_MISSING = "the plot needs matplotlib: pip install 'dialectic[plot]'"
UNBOUNDED = 100_000   # a width no table reaches: to measure a table's natural width
LISTED = 10          # missing items and failures named before "and N more"


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _interval(low: float, high: float, scale: float = 100, digits: int = 1) -> str:
    return f"[{low * scale:.{digits}f}, {high * scale:.{digits}f}]"


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _cost(value: float) -> str:
    """A cost per question: four places, more for less ($0.00002 is not "$0.0000")."""
    return usd(value, decimals=max(4, usd_decimals(value)))


def _mode_cells(m: ModeSummary) -> list[str]:
    return [m.mode, str(m.n), f"{_percent(m.accuracy)} {_interval(*m.interval)}",
            _cost(m.cost_usd), f"{m.calls:.1f}", f"{m.tokens:,.0f}", f"{m.seconds:.1f}",
            str(m.ties), str(m.errors)]


MODE_COLUMNS = ("mode", "n", "accuracy [95% CI]", "cost/q", "calls", "tokens", "s/q", "ties",
                "errors")
COMPARISON_COLUMNS = ("mode", "against", "difference [95% CI]", "p", "b", "c", "cost ratio")


def _comparison_cells(c: Comparison) -> list[str]:
    ratio = "n/a" if c.cost_ratio is None else f"{c.cost_ratio:.1f}x"
    return [c.mode, c.against,
            f"{c.paired.diff * 100:+.1f} pts {_interval(c.paired.low, c.paired.high)}",
            _p(c.paired.p_value), str(c.paired.b), str(c.paired.c), ratio]


def _table(console: Console, columns: tuple[str, ...], rows: list[list[str]],
           text_columns: int) -> None:
    """A table when it fits the console whole; else one line a row ("name: column value, ..."),
    so no figure is ever cut or folded."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for index, name in enumerate(columns):
        table.add_column(name, justify="left" if index < text_columns else "right",
                         no_wrap=True)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    unbounded = console.options.update(max_width=UNBOUNDED)
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table, markup=False, highlight=False)
        return
    for row in rows:
        head = " vs ".join(row[:text_columns])
        rest = ", ".join(f"{name} {cell}" for name, cell in
                         zip(columns[text_columns:], row[text_columns:], strict=True))
        print_line(console, f"  - {head}: {rest}")


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _heading(report: Report) -> str:
    notes = "".join(f" [{note}]" for note, on in (("REHEARSAL", report.rehearsal),
                                                  ("INCOMPLETE", not report.complete)) if on)
    return f"Evaluation of {report.dataset} ({report.source}){notes}"


def print_report(report: Report, console: Console) -> None:
    """The report as tables and sentences, wrapped to the console's width."""
    print_line(console, _heading(report), style="bold")
    if not report.modes:
        print_line(console, "no mode has an outcome yet")
    else:
        _table(console, MODE_COLUMNS, [_mode_cells(m) for m in report.modes], 1)
    if report.comparisons:
        console.print()
        print_line(console, "Paired comparisons: the mode minus the baseline over the items "
                            "both answered; p: McNemar's exact test; b: only the mode right, "
                            "c: only the baseline right")
        _table(console, COMPARISON_COLUMNS, [_comparison_cells(c) for c in report.comparisons],
               2)
    console.print()
    print_line(console, f"Normalisation: {report.normalisation}")
    for line in reading(report):
        print_line(console, f"- {line}")
    if report.stopped:
        print_line(console, f"Stopped: {report.stopped}", style="red")
    if report.missing:
        print_line(console, f"Incomplete: {len(report.missing)} item(s) lack an outcome in at "
                            f"least one mode: {_listed(list(report.missing))}", style="red")
    if report.failures:
        print_line(console, f"No answer (counted as wrong), {len(report.failures)} in all:")
        for failure in report.failures[:LISTED]:
            print_line(console, f"  - {failure.mode}, item {failure.item_id}: {failure.error}")
        if len(report.failures) > LISTED:
            print_line(console, f"  - and {len(report.failures) - LISTED} more")


# --------------------------------------------------------------------------------------------
# the plot


def _pyplot_free_figure() -> Any:
    """A matplotlib Figure drawn by the Agg canvas (no pyplot, no display, no global state)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigurationError(PLOT_MISSING) from None
    return Figure(figsize=(7.0, 4.5), dpi=120, layout="constrained")


def _x_axis(report: Report) -> tuple[list[float], str]:
    """Cost per question when every mode cost something; else calls per question (a rehearsal
    or a fully cached run costs nothing, and a log scale has no 0)."""
    if report.modes and all(m.cost_usd > 0 for m in report.modes):
        return [m.cost_usd for m in report.modes], "cost per question (USD, log scale)"
    return ([max(m.calls, 1e-3) for m in report.modes],
            "calls per question (log scale; no cost recorded)")


def _title(report: Report, against: str) -> str:
    notes = [n for n, on in (("REHEARSAL", report.rehearsal),
                             ("INCOMPLETE", not report.complete)) if on]
    return f"{report.dataset}: accuracy against {against}" + (f" [{', '.join(notes)}]" if notes
                                                         else "")


def check_plot(path: pathlib.Path, *, force: bool = False) -> None:
    """Before an evaluation is paid for: the plot asked for can be drawn (matplotlib, the plot
    extra, is installed) and written where asked (bot/cli/plot_file.py: a .png, .svg or .pdf,
    a new file or with `force` an existing regular one). ConfigurationError or InvalidRequest."""
    plot_format(path)
    _pyplot_free_figure()
    check_target(path, force=force)


def write_plot(report: Report, path: pathlib.Path, *, force: bool = False) -> None:
    """Accuracy (with its Wilson 95% interval) against cost per question, one point per mode, to
    `path` in the format its suffix names. ConfigurationError without matplotlib,
    InvalidRequest if it cannot or may not write there."""
    fmt = plot_format(path)
    figure = _pyplot_free_figure()
    axes = figure.subplots()
    xs, label = _x_axis(report)
    for x, mode in zip(xs, report.modes, strict=True):
        low, high = mode.interval
        axes.errorbar([x], [mode.accuracy], yerr=[[mode.accuracy - low], [high - mode.accuracy]],
                      fmt="o", capsize=4)
        axes.annotate(mode.mode, (x, mode.accuracy), xytext=(6, 4), textcoords="offset points",
                      parse_math=False)
    axes.set_xscale("log")
    axes.margins(x=0.2)
    axes.set_ylim(-0.03, 1.05)   # a point at 0 % drawn whole, not cut by the axis
    axes.set_xlabel(label)
    axes.set_ylabel("accuracy (95% Wilson interval)")
    axes.set_title(_title(report, label.split(" per ")[0]), parse_math=False)
    axes.grid(True, which="both", alpha=0.3)
    drawn = io.BytesIO()
    figure.savefig(drawn, format=fmt)
    write_target(path, drawn.getvalue(), force=force)
