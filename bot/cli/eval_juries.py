"""`dialectic eval --panels`: each panel's models and families beside its accuracy (in the modes
table, as jury1, jury2, ...), how much its judges agreed, and how much they preferred their own
family (engine/evaluation/juries.py). Printed as text, never as rich markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from bot.cli.outcomes import print_line
from engine.evaluation.juries import JuryFigures
from engine.evaluation.report import ModeSummary


def jury_lines(jury: JuryFigures, summary: ModeSummary | None, *, rehearsal: bool) -> list[str]:
    """A panel's lines: what it is, then accuracy, agreement, exclusions, self-preference, each
    with its count."""
    families = sorted(set(jury.families))
    mixed = "mixed" if len([f for f in families if f != "unknown"]) > 1 else "one family"
    lines = [f"{jury.mode}: {', '.join(jury.models)} ({mixed}: {', '.join(jury.families)})"]
    if summary is not None:
        lines.append(f"  accuracy        {summary.correct} of {summary.n} "
                     f"({summary.accuracy * 100:.1f}%)")
    alpha = "n/a" if jury.alpha_mean is None else f"{jury.alpha_mean:.2f}"
    lines.append(f"  agreement       mean alpha {alpha} over {jury.alpha_n} debate(s); "
                 f"unanimous on the winner in {jury.unanimous} of {jury.debates}")
    lines.append(f"  self-vote       a judge excluded in {jury.excluded} of {jury.debates} "
                 f"debate(s); a side scored by its own family only in {jury.unexcludable}")
    if jury.self_preference is None:
        why = ("the rehearsal model answers for every debater, of no family" if rehearsal
               else "no debate had judges both of the debaters' family and of another")
        lines.append(f"  self-preference not measured: {why}")
    else:
        lines.append(f"  self-preference {jury.self_preference:+.2f} rubric points (the "
                     f"debaters' family's judges above the others) over "
                     f"{jury.self_preference_n} debate(s)")
    return lines


def print_juries(console: Console, juries: Sequence[JuryFigures],
                 modes: Sequence[ModeSummary], *, rehearsal: bool) -> None:
    if not juries:
        return
    by_mode = {m.mode: m for m in modes}
    head = "Panels" + (" (REHEARSAL: figures from the offline model, not a measurement)"
                       if rehearsal else "")
    print_line(console, head, style="bold")
    for jury in juries:
        for line in jury_lines(jury, by_mode.get(jury.mode), rehearsal=rehearsal):
            print_line(console, line)


__all__ = ["jury_lines", "print_juries"]
