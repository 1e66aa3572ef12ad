"""The evaluation report: per mode accuracy with its interval and cost per question, paired
comparisons against `single` and the vote, and one reading line per mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.evaluation.answers import describe
from engine.evaluation.dataset import Dataset
from engine.evaluation.stats import Paired, paired, wilson


@dataclass(frozen=True)
class ItemOutcome:
    item_id: str
    answer: str | None
    correct: bool
    tie: bool
    cost_usd: float
    calls: int
    tokens: int
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class ModeSummary:
    mode: str
    n: int
    correct: int
    accuracy: float
    interval: tuple[float, float]
    cost_usd: float
    calls: float
    tokens: float
    seconds: float
    ties: int
    errors: int


@dataclass(frozen=True)
class Comparison:
    mode: str
    against: str
    paired: Paired
    cost_ratio: float | None


@dataclass(frozen=True)
class Report:
    dataset: str
    source: str
    normalisation: str
    modes: tuple[ModeSummary, ...]
    comparisons: tuple[Comparison, ...]
    complete: bool
    missing: tuple[str, ...]
    vote_samples: int | None = None
    rehearsal: bool = False


def _summary(mode: str, outcomes: Sequence[ItemOutcome]) -> ModeSummary:
    n = len(outcomes)
    k = sum(o.correct for o in outcomes)

    def mean(values: Sequence[float]) -> float:
        return sum(values) / n if n else 0.0

    return ModeSummary(
        mode=mode, n=n, correct=k, accuracy=k / n if n else 0.0, interval=wilson(k, n),
        cost_usd=mean([o.cost_usd for o in outcomes]), calls=mean([o.calls for o in outcomes]),
        tokens=mean([o.tokens for o in outcomes]), seconds=mean([o.seconds for o in outcomes]),
        ties=sum(o.tie for o in outcomes), errors=sum(o.error is not None for o in outcomes))


def _compare(mode: str, against: str, outcomes: Mapping[str, Sequence[ItemOutcome]],
             summaries: dict[str, ModeSummary]) -> Comparison:
    mine = {o.item_id: o.correct for o in outcomes[mode]}
    theirs = {o.item_id: o.correct for o in outcomes[against]}
    shared = [i for i in mine if i in theirs]
    base = summaries[against].cost_usd
    ratio = summaries[mode].cost_usd / base if base > 0 else None
    return Comparison(mode, against, paired([mine[i] for i in shared],
                                            [theirs[i] for i in shared]), ratio)


def build_report(dataset: Dataset, outcomes: Mapping[str, Sequence[ItemOutcome]], *,
                 vote_label: str = "vote", vote_samples: int | None = None,
                 rehearsal: bool = False) -> Report:
    summaries = {mode: _summary(mode, done) for mode, done in outcomes.items()}
    comparisons = [_compare(mode, against, outcomes, summaries)
                   for mode in outcomes for against in ("single", vote_label)
                   if against in outcomes and against != mode
                   and not (mode == "single" and against == vote_label)]
    expected = {item.id for item in dataset.items}
    missing = tuple(f"{mode}: {len(expected - {o.item_id for o in done})} of "
                    f"{len(expected)} items not run"
                    for mode, done in outcomes.items()
                    if expected - {o.item_id for o in done})
    return Report(dataset=dataset.name, source=dataset.source, normalisation=describe(dataset),
                  modes=tuple(summaries.values()), comparisons=tuple(comparisons),
                  complete=not missing, missing=missing, vote_samples=vote_samples,
                  rehearsal=rehearsal)


def to_json(report: Report) -> dict[str, Any]:
    return {
        "dataset": report.dataset, "source": report.source, "rehearsal": report.rehearsal,
        "vote_samples": report.vote_samples,
        "modes": [{"mode": m.mode, "n": m.n, "correct": m.correct, "accuracy": m.accuracy,
                   "interval": list(m.interval), "cost_usd": m.cost_usd, "calls": m.calls,
                   "tokens": m.tokens, "seconds": m.seconds, "ties": m.ties,
                   "errors": m.errors} for m in report.modes],
        "comparisons": [{"mode": c.mode, "against": c.against, "difference": c.paired.diff,
                         "interval": [c.paired.low, c.paired.high],
                         "p_value": c.paired.p_value, "b": c.paired.b, "c": c.paired.c,
                         "cost_ratio": c.cost_ratio} for c in report.comparisons],
        "normalisation": report.normalisation, "complete": report.complete,
        "missing": list(report.missing),
    }


def from_json(data: Mapping[str, Any]) -> Report:
    modes = tuple(ModeSummary(
        mode=m["mode"], n=m["n"], correct=m["correct"], accuracy=m["accuracy"],
        interval=(m["interval"][0], m["interval"][1]), cost_usd=m["cost_usd"],
        calls=m["calls"], tokens=m["tokens"], seconds=m["seconds"], ties=m["ties"],
        errors=m["errors"]) for m in data["modes"])
    comparisons = tuple(Comparison(
        mode=c["mode"], against=c["against"], cost_ratio=c["cost_ratio"],
        paired=Paired(c["difference"], c["interval"][0], c["interval"][1], c["b"], c["c"],
                      c["p_value"])) for c in data["comparisons"])
    return Report(dataset=data["dataset"], source=data.get("source", ""),
                  normalisation=data["normalisation"], modes=modes, comparisons=comparisons,
                  complete=data["complete"], missing=tuple(data["missing"]),
                  vote_samples=data.get("vote_samples"), rehearsal=data.get("rehearsal", False))


def _against(name: str, report: Report) -> str:
    return "a single call" if name == "single" else f"the {name}"


def reading(report: Report) -> list[str]:
    """One sentence per mode compared: beats only when the interval excludes 0."""
    lines = []
    for mode in report.modes:
        mine = [c for c in report.comparisons if c.mode == mode.mode]
        if not mine:
            continue
        parts = []
        for c in mine:
            points = f"{abs(c.paired.diff) * 100:.0f} points [{c.paired.low * 100:.0f}, " \
                     f"{c.paired.high * 100:.0f}]"
            cost = f" at {c.cost_ratio:.1f}x the cost" if c.cost_ratio is not None else ""
            if c.paired.low > 0:
                parts.append(f"beats {_against(c.against, report)} by {points}{cost}")
            elif c.paired.high < 0:
                parts.append(f"is worse than {_against(c.against, report)} by {points}{cost}")
            else:
                parts.append(f"does not beat {_against(c.against, report)} "
                             f"(difference {c.paired.diff * 100:+.0f} points "
                             f"[{c.paired.low * 100:.0f}, {c.paired.high * 100:.0f}]){cost}")
        lines.append(f"{mode.mode} " + "; it ".join(parts))
    return lines
