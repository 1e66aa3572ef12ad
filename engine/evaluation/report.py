"""What an evaluation found: per mode, accuracy with its Wilson interval and the cost of an
answer; per pair of modes on the same items, the difference with Newcombe's interval and
McNemar's exact p; and readings in words that never claim more than the interval and the
test allow.

Baselines are `single` (one call) and the vote (`vote_label`, K samples, majority answer). Every
other mode is compared with both, and the vote with `single`, over the items both answered. An
item's outcome with an `error` (refused, degraded, over budget...) counts as wrong and is listed;
an item with no outcome in some mode makes the report incomplete and is named in `missing`;
why a run stopped early (the budget, a failed debate) is `stopped`, a line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from engine.evaluation.answers import describe
from engine.evaluation.dataset import Dataset
from engine.evaluation.stats import Paired, paired, wilson

SINGLE = "single"
FIRST_PANEL = "jury1"   # `eval --panels`: the panel the others are compared with
#: A reading says "beats" (or "does worse") only when the 95% interval excludes 0 and McNemar's
#: exact test agrees at this level; the two can differ near the edge, and then it says less.
SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class ItemOutcome:
    """One item answered by one mode; `error` says why there was no answer."""

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
    """A mode over the items it answered; cost, calls, tokens and seconds are per question."""

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
    """`mode` against `against` on the `shared` items both answered (None: not recorded, an
    older report); cost_ratio is None when there are none, or the baseline really cost $0 on
    them (a rehearsal, a cache)."""

    mode: str
    against: str
    paired: Paired
    cost_ratio: float | None
    shared: int | None = None


@dataclass(frozen=True)
class Failure:
    """An item that got no answer in a mode, and why."""

    mode: str
    item_id: str
    error: str


@dataclass(frozen=True)
class Report:
    """Everything an evaluation found: `complete` is False while any item lacks an outcome in
    some mode (`missing` names them, items only); `stopped` says why a run stopped before every
    item had one; `rehearsal` marks figures from the offline model."""

    dataset: str
    source: str
    normalisation: str
    modes: tuple[ModeSummary, ...]
    comparisons: tuple[Comparison, ...]
    complete: bool
    missing: tuple[str, ...]
    failures: tuple[Failure, ...] = ()
    vote_label: str = "vote"
    vote_samples: int | None = None
    rehearsal: bool = False
    stopped: str | None = None


def _right(outcome: ItemOutcome) -> bool:
    """Correct, and answered: an outcome with an error counts as wrong whatever it says."""
    return outcome.correct and outcome.error is None


def _summary(mode: str, outcomes: Sequence[ItemOutcome]) -> ModeSummary:
    n = len(outcomes)
    correct = sum(1 for o in outcomes if _right(o))

    def mean(values: list[float]) -> float:
        return fmean(values) if values else 0.0

    return ModeSummary(
        mode=mode, n=n, correct=correct, accuracy=correct / n if n else 0.0,
        interval=wilson(correct, n), cost_usd=mean([o.cost_usd for o in outcomes]),
        calls=mean([float(o.calls) for o in outcomes]),
        tokens=mean([float(o.tokens) for o in outcomes]),
        seconds=mean([o.seconds for o in outcomes]),
        ties=sum(1 for o in outcomes if o.tie),
        errors=sum(1 for o in outcomes if o.error is not None))


def _indexed(dataset: Dataset, mode: str,
             outcomes: Sequence[ItemOutcome]) -> dict[str, ItemOutcome]:
    known = {item.id for item in dataset.items}
    by_id: dict[str, ItemOutcome] = {}
    for outcome in outcomes:
        if outcome.item_id not in known:
            raise ValueError(f"{mode}: outcome for {outcome.item_id!r}, which is not an item of "
                             f"{dataset.name}")
        if outcome.item_id in by_id:
            raise ValueError(f"{mode}: two outcomes for item {outcome.item_id!r}")
        by_id[outcome.item_id] = outcome
    return by_id


def _compare(mode: str, against: str, dataset: Dataset,
             by_mode: Mapping[str, dict[str, ItemOutcome]]) -> Comparison:
    ours, theirs = by_mode[mode], by_mode[against]
    shared = [item.id for item in dataset.items if item.id in ours and item.id in theirs]
    result = paired([_right(ours[i]) for i in shared], [_right(theirs[i]) for i in shared])
    our_cost = sum(ours[i].cost_usd for i in shared)
    their_cost = sum(theirs[i].cost_usd for i in shared)
    ratio = our_cost / their_cost if their_cost > 0 else None
    return Comparison(mode=mode, against=against, paired=result, cost_ratio=ratio,
                      shared=len(shared))


def _pairs(modes: Sequence[str], vote_label: str) -> list[tuple[str, str]]:
    pairs = []
    for mode in modes:
        for baseline in (SINGLE, vote_label):
            if mode == baseline or baseline not in modes:
                continue
            if mode == SINGLE and baseline == vote_label:
                continue        # the vote against single is said once, the vote's way round
            pairs.append((mode, baseline))
    # `--panels`: every later panel against the first (engine/evaluation/juries.py)
    pairs += [(mode, FIRST_PANEL) for mode in modes
              if FIRST_PANEL in modes and mode != FIRST_PANEL and mode.startswith("jury")]
    return pairs


def build_report(dataset: Dataset, outcomes: Mapping[str, Sequence[ItemOutcome]], *,
                 vote_label: str = "vote", vote_samples: int | None = None,
                 rehearsal: bool = False) -> Report:
    """The report of `outcomes` (mode -> one outcome per answered item) on `dataset`."""
    by_mode = {mode: _indexed(dataset, mode, found) for mode, found in outcomes.items()}
    modes = tuple(_summary(mode, [found[i.id] for i in dataset.items if i.id in found])
                  for mode, found in by_mode.items())
    comparisons = tuple(_compare(mode, against, dataset, by_mode)
                        for mode, against in _pairs(list(by_mode), vote_label))
    missing = tuple(item.id for item in dataset.items
                    if any(item.id not in found for found in by_mode.values()))
    failures = tuple(Failure(mode=mode, item_id=i.id, error=found[i.id].error or "")
                     for mode, found in by_mode.items() for i in dataset.items
                     if i.id in found and found[i.id].error is not None)
    return Report(dataset=dataset.name, source=dataset.source, normalisation=describe(dataset),
                  modes=modes, comparisons=comparisons,
                  complete=bool(by_mode) and not missing, missing=missing, failures=failures,
                  vote_label=vote_label, vote_samples=vote_samples, rehearsal=rehearsal)


# --------------------------------------------------------------------------------------------
# JSON: the shape scripts rely on, and back (`eval show` reprints a stored report)


def to_json(report: Report) -> dict[str, Any]:
    """The report as plain JSON values; `from_json` reads it back unchanged."""
    return {
        "dataset": report.dataset,
        "source": report.source,
        "rehearsal": report.rehearsal,
        "modes": [{"mode": m.mode, "n": m.n, "correct": m.correct, "accuracy": m.accuracy,
                   "interval": list(m.interval), "cost_usd": m.cost_usd, "calls": m.calls,
                   "tokens": m.tokens, "seconds": m.seconds, "ties": m.ties,
                   "errors": m.errors} for m in report.modes],
        "comparisons": [{"mode": c.mode, "against": c.against, "difference": c.paired.diff,
                         "interval": [c.paired.low, c.paired.high],
                         "p_value": c.paired.p_value, "b": c.paired.b, "c": c.paired.c,
                         "cost_ratio": c.cost_ratio, "items": c.shared}
                        for c in report.comparisons],
        "vote_label": report.vote_label,
        "vote_samples": report.vote_samples,
        "normalisation": report.normalisation,
        "complete": report.complete,
        "missing": list(report.missing),
        "stopped": report.stopped,
        "errors": [{"mode": f.mode, "item": f.item_id, "error": f.error}
                   for f in report.failures],
        "readings": reading(report),
    }


class _Reader:
    """Typed access to one JSON object, each problem one line naming where it is."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"report JSON: {where or 'the report'} must be an object")
        self.data, self.where = data, where

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise ValueError(f"report JSON: {self.where}{key} is missing")
        return self.data[key]

    def _bad(self, key: str, what: str) -> ValueError:
        return ValueError(f"report JSON: {self.where}{key} must be {what}")

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer")
        return value

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        return float(value)

    def optional_number(self, key: str) -> float | None:
        return None if self.data.get(key) is None else self.number(key)

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def pair(self, key: str) -> tuple[float, float]:
        value = self._get(key)
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, int | float) and not isinstance(v, bool)
                           for v in value)):
            raise self._bad(key, "a list of two numbers")
        return float(value[0]), float(value[1])

    def objects(self, key: str, *, required: bool = True) -> list[_Reader]:
        value = self._get(key) if required else self.data.get(key, [])
        if not isinstance(value, list):
            raise self._bad(key, "a list")
        return [_Reader(v, f"{self.where}{key}[{i}].") for i, v in enumerate(value)]

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of strings")
        return tuple(value)


def _mode_from(r: _Reader) -> ModeSummary:
    return ModeSummary(mode=r.text("mode"), n=r.integer("n"), correct=r.integer("correct"),
                       accuracy=r.number("accuracy"), interval=r.pair("interval"),
                       cost_usd=r.number("cost_usd"), calls=r.number("calls"),
                       tokens=r.number("tokens"), seconds=r.number("seconds"),
                       ties=r.integer("ties"), errors=r.integer("errors"))


def _comparison_from(r: _Reader) -> Comparison:
    low, high = r.pair("interval")
    result = Paired(diff=r.number("difference"), low=low, high=high, b=r.integer("b"),
                    c=r.integer("c"), p_value=r.number("p_value"))
    shared = r.optional_number("items")
    return Comparison(mode=r.text("mode"), against=r.text("against"), paired=result,
                      cost_ratio=r.optional_number("cost_ratio"),
                      shared=None if shared is None else int(shared))


STOPPED_PREFIX = "stopped: "   # how reports before `stopped` kept the reason, in `missing`


def _stop_of(r: _Reader, missing: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """The stop reason and the missing items (an older report kept the reason in `missing`)."""
    stopped = r.data.get("stopped")
    if stopped is not None and not isinstance(stopped, str):
        raise ValueError("report JSON: stopped must be a string or null")
    old = [m for m in missing if m.startswith(STOPPED_PREFIX)]
    if old and stopped is None:
        stopped = "; ".join(m.removeprefix(STOPPED_PREFIX) for m in old)
    return stopped, tuple(m for m in missing if not m.startswith(STOPPED_PREFIX))


def from_json(data: Any) -> Report:
    """A report from `to_json`'s shape; ValueError (one line naming the field) otherwise."""
    r = _Reader(data, "")
    samples = r.data.get("vote_samples")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)):
        raise ValueError("report JSON: vote_samples must be an integer or null")
    stopped, missing = _stop_of(r, r.texts("missing"))
    return Report(
        dataset=r.text("dataset"), source=r.text("source"), normalisation=r.text("normalisation"),
        modes=tuple(_mode_from(m) for m in r.objects("modes")),
        comparisons=tuple(_comparison_from(c) for c in r.objects("comparisons")),
        complete=r.flag("complete"), missing=missing, stopped=stopped,
        failures=tuple(Failure(mode=f.text("mode"), item_id=f.text("item"),
                               error=f.text("error"))
                       for f in r.objects("errors", required=False)),
        vote_label=r.text("vote_label") if "vote_label" in r.data else "vote",
        vote_samples=samples,
        rehearsal=r.flag("rehearsal") if "rehearsal" in r.data else False)


# --------------------------------------------------------------------------------------------
# readings: one line per mode compared, claiming only what the intervals hold


def _points(value: float) -> str:
    """A difference of proportions in percentage points: whole points, one decimal below 1
    so a bound just above 0 never prints as 0."""
    points = value * 100
    return f"{points:.1f}" if 0 < abs(points) < 1 else f"{points:.0f}"


def _baseline_words(report: Report, against: str) -> str:
    if against == SINGLE:
        return "a single call"
    if against == report.vote_label:
        return (f"a {report.vote_samples}-sample vote" if report.vote_samples
                else "a majority vote")
    return against


def _verdict(report: Report, c: Comparison) -> str:
    span = f"[{_points(c.paired.low)}, {_points(c.paired.high)}]"
    baseline = _baseline_words(report, c.against)
    significant = c.paired.p_value < SIGNIFICANCE
    if c.paired.low > 0 and significant:
        said = f"beats {baseline} by {_points(c.paired.diff)} points {span}"
    elif c.paired.high < 0 and significant:
        said = f"does worse than {baseline} by {_points(-c.paired.diff)} points {span}"
    else:
        said = f"does not beat {baseline} ({_points(c.paired.diff)} points {span})"
    if c.cost_ratio is not None:
        return f"{said} at {_ratio(c.cost_ratio)} the cost"
    return f"{said}, cost ratio unknown ({c.against} cost nothing)"   # really $0: see _compare


def _ratio(value: float) -> str:
    """4.1x; a ratio below 1 with two significant digits (0.043x), never "0.0x"."""
    return f"{value:.1f}x" if value >= 0.95 else f"{value:.2g}x"


def reading(report: Report) -> list[str]:
    """One line per mode with a baseline to compare with, e.g. "panel beats a single call by
    14 points [6, 22] at 4.1x the cost; it does not beat a 5-sample vote"; a first line says
    when the report is partial or a rehearsal."""
    lines = []
    if report.rehearsal:
        lines.append("REHEARSAL: the offline placeholder model answered; these figures say "
                     "nothing about a real model")
    if not report.complete:
        lines.append(f"incomplete: {len(report.missing)} item(s) lack an outcome in some mode; "
                     "each comparison covers only the items both modes answered")
    for mode in report.modes:
        found = [c for c in report.comparisons if c.mode == mode.mode]
        if not found:
            continue
        said = [_verdict(report, c) if c.shared != 0 else
                f"has no item in common with {_baseline_words(report, c.against)} yet"
                for c in found]
        lines.append(f"{mode.mode} " + "; it ".join(said))
    return lines
