"""bot/cli/eval_report.py print_report: the tables and sentences, at a fixed console width."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from bot.cli.eval_report import print_report
from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.report import ItemOutcome, Report, build_report

DATASET = Dataset(name="sums [bold]x[/bold]", source="data/sums.jsonl",
                  items=tuple(Item(id=str(i), question="q", answer=str(i))
                              for i in range(1, 21)))


def _mode(rights: str, cost: float, calls: int, error_at: int | None = None) -> list[ItemOutcome]:
    return [ItemOutcome(item_id=str(i), answer=str(i), correct=flag == "1", tie=False,
                        cost_usd=cost, calls=calls, tokens=250 * calls, seconds=1.5 * calls,
                        error="refused" if i == error_at else None)
            for i, flag in enumerate(rights, start=1) if flag != "-"]


def _report() -> Report:
    return build_report(DATASET, {
        "single": _mode("11001100110011001100", 0.001, 1),
        "vote": _mode("11101110111011101110", 0.005, 5),
        "panel": _mode("1111111111111111111-", 0.004, 7, error_at=20),
    }, vote_samples=5)


def printed(report: Report, width: int) -> str:
    out = io.StringIO()
    print_report(report, Console(file=out, width=width, color_system=None, soft_wrap=True))
    return out.getvalue()


def test_the_report_prints_as_tables_with_the_readings() -> None:
    text = printed(_report(), 100)
    lines = text.splitlines()
    assert lines[0] == "Evaluation of sums [bold]x[/bold] (data/sums.jsonl) [INCOMPLETE]"
    header = next(line for line in lines if line.startswith("mode"))
    assert header.split() == ["mode", "n", "accuracy", "[95%", "CI]", "cost/q", "calls",
                              "tokens", "s/q", "ties", "errors"]
    single = next(line for line in lines if line.startswith("single"))
    assert single.split() == ["single", "20", "50.0%", "[29.9,", "70.1]", "$0.0010", "1.0",
                              "250", "1.5", "0", "0"]
    panel = next(line for line in lines if line.startswith("panel "))
    assert panel.split()[1:3] == ["19", "100.0%"]
    compared = next(line for line in lines if line.split()[:2] == ["panel", "vote"])
    assert compared.split()[2:] == ["+21.1", "pts", "[0.1,", "43.3]", "0.125", "4", "0", "0.8x"]
    flat = " ".join(text.split())
    assert "p: McNemar's exact test" in flat
    assert "Normalisation: Replies are normalised" in flat
    assert "- panel beats a single call by 47 points [21, 68] at 4.0x the cost; it does not beat "\
           "a 5-sample vote (21 points [0.1, 43]) at 0.8x the cost" in flat
    assert "Incomplete: 1 item(s) lack an outcome in at least one mode: 20" in flat
    assert "- incomplete: 1 item(s)" in flat
    assert max(len(line) for line in lines) <= 100


def test_a_narrow_console_gets_lines_instead_of_cut_figures() -> None:
    text = printed(_report(), 60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "…" not in text
    assert "single: n 20, accuracy [95% CI] 50.0% [29.9, 70.1]" in " ".join(text.split())
    assert "vote vs single: difference [95% CI]" in " ".join(text.split())


def test_rehearsals_and_answerless_items_are_said() -> None:
    report = build_report(DATASET, {
        "single": _mode("1" * 20, 0.0, 1),
        "panel": _mode("1" * 20, 0.0, 7, error_at=4),
    }, rehearsal=True)
    text = printed(report, 100)
    assert text.splitlines()[0].endswith("[REHEARSAL]")
    assert "- REHEARSAL: the offline placeholder model answered" in text
    assert "No answer (counted as wrong), 1 in all:" in text
    assert "- panel, item 4: refused" in text
    assert "cost ratio unknown (single cost nothing)" in " ".join(text.split())


def test_long_lists_are_cut_with_a_count() -> None:
    many = tuple(f"q{i}" for i in range(25))
    report = replace(_report(), missing=many, complete=False)
    text = " ".join(printed(report, 100).split())
    assert "25 item(s) lack an outcome in at least one mode: q0, q1" in text
    assert "q9 and 15 more" in text


def test_a_report_with_no_modes_says_so() -> None:
    text = printed(build_report(DATASET, {}), 80)
    assert "no mode has an outcome yet" in text
