"""Consensus statistics for a judge panel: how far the judges agree, and what to do about it.

A debate is scored by several LLM judges. Before a verdict is shown as settled we want to know
whether the judges *agree*, not just what their average says. This module turns the panel's raw
output into that answer, with pure functions only (no I/O, no clocks, no global state):

* ``interval_alpha`` — Krippendorff's alpha (interval metric) over the judges x items score matrix;
  the chance-corrected reliability of the scores, tolerant of missing ratings.
* ``bootstrap_alpha_interval`` — a percentile bootstrap interval for that alpha, resampling items.
  It uses a vectorised closed form of interval alpha (identical to the coincidence-matrix
  definition) so 1000 resamples cost about a millisecond instead of a second.
* ``fleiss_kappa`` — agreement on the categorical calls ("A", "B", "tie"), generalised to an
  unequal number of raters per subject.
* ``calibrate`` — removes each judge's habitual leniency/harshness using its scoring history,
  shrinking short histories toward the panel so one odd debate does not swing a judge.
* ``weighted_scores`` / ``divergence`` — the panel's per-item score and where the judges split.
* ``band_for`` / ``route`` — the policy: how much agreement is enough to publish automatically,
  and when a human must look.

Conventions: ``None`` (or NaN) marks a missing rating everywhere; a statistic that is undefined
for the data given is returned as ``None`` rather than raising, so callers can route "cannot
tell" to a human. Malformed input (ragged rows, mismatched lengths, bad parameters) raises
``ValueError``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
import numpy.typing as npt

__all__ = [
    "Band",
    "ConsensusStats",
    "Divergence",
    "ItemSpread",
    "Routing",
    "Thresholds",
    "band_for",
    "bootstrap_alpha_interval",
    "calibrate",
    "divergence",
    "fleiss_kappa",
    "interval_alpha",
    "route",
    "summarise",
    "weighted_scores",
]

Band = Literal["high", "tentative", "review", "contentious"]
Routing = Literal["auto_approve", "tentative", "human_review", "escalate"]
FloatArray = npt.NDArray[np.float64]

#: Absolute slack when comparing score spreads with their limits, so that a spread which is
#: 1.0 on paper but 1.0000000000000009 in binary floating point still counts as 1.0.
_SPREAD_EPS = 1e-9
#: Bootstrap resamples are drawn in blocks of this many rows to bound memory.
_BOOTSTRAP_CHUNK = 4096

_ROUTING_FOR_BAND: dict[Band, Routing] = {
    "high": "auto_approve",
    "tentative": "tentative",
    "review": "human_review",
    "contentious": "escalate",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Alpha cut-offs of one preset; ``escalate <= tentative <= high`` is enforced.

    * ``alpha >= high`` -> band "high", routing "auto_approve"
    * ``tentative <= alpha < high`` -> "tentative" / "tentative"
    * ``escalate <= alpha < tentative`` -> "review" / "human_review"
    * ``alpha < escalate`` -> "contentious" / "escalate"
    * ``irreconcilable_spread``: with a split on the winner, an item spread this wide (or wider)
      makes the panel irreconcilable (see ``divergence``).
    """

    high: float = 0.80
    tentative: float = 0.67
    escalate: float = 0.50
    irreconcilable_spread: float = 3.0

    def __post_init__(self) -> None:
        if not self.escalate <= self.tentative <= self.high:
            raise ValueError(
                f"thresholds must satisfy escalate <= tentative <= high, got "
                f"{self.escalate} / {self.tentative} / {self.high}"
            )
        if not self.irreconcilable_spread > 0:
            raise ValueError("irreconcilable_spread must be positive")


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemSpread:
    """How the judges scored one item."""

    item: str
    mean: float
    spread: float  # max - min across judges
    stdev: float  # population standard deviation across judges
    ratings: dict[str, float]  # judge -> score


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """Where the panel agrees and where it splits."""

    agreements: list[ItemSpread]  # spread <= agree_spread; by spread, then label
    disagreements: list[ItemSpread]  # top_n widest with spread > agree_spread; widest first
    winner_split: bool  # the judges named different winners (None ignored)
    irreconcilable: bool  # winner_split and widest spread >= thresholds.irreconcilable_spread


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsensusStats:
    """The headline numbers of one judged debate, and the routing they imply."""

    alpha: float | None
    alpha_interval: tuple[float, float] | None
    kappa: float | None
    band: Band
    routing: Routing
    irreconcilable: bool


# --------------------------------------------------------------------------- alpha


def _as_matrix(matrix: Sequence[Sequence[float | None]]) -> FloatArray:
    """Rows = raters, columns = items, missing -> NaN. Raises on ragged rows or infinities."""
    rows = [[math.nan if v is None else float(v) for v in row] for row in matrix]
    width = len(rows[0]) if rows else 0
    if any(len(row) != width for row in rows):
        raise ValueError("every rater must have a value (or None) for every item")
    data = np.array(rows, dtype=np.float64).reshape(len(rows), width)
    if np.isinf(data).any():
        raise ValueError("scores must be finite (use None for a missing rating)")
    return data


def _pairable(data: FloatArray) -> FloatArray:
    """The columns (items) that hold at least two ratings; only they carry information."""
    counts = (~np.isnan(data)).sum(axis=0)
    return data[:, counts >= 2]


def interval_alpha(matrix: Sequence[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the interval metric (squared differences).

    ``matrix[j][i]`` is judge j's score for item i; ``None`` or NaN is a missing rating.
    Returns ``None`` when alpha is undefined: no item was rated by two or more judges.
    When every pairable value is identical, observed and expected disagreement are both zero
    (0/0); we define that as perfect agreement and return ``1.0``.
    """
    data = _pairable(_as_matrix(matrix))
    values = data[~np.isnan(data)]
    if values.size < 2:
        return None
    if np.all(values == values[0]):
        return 1.0
    # Only pairable items are passed: single ratings add nothing to the coincidence matrix,
    # and leaving them out keeps krippendorff's value domain (and its cost) small.
    result = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    return float(result)


@dataclass(frozen=True, slots=True)
class _ColumnStats:
    """Per-item sufficient statistics of interval alpha, centred on the pooled mean.

    For item u with m_u >= 2 ratings: ``size`` = m_u, ``total`` = sum of centred values,
    ``squares`` = sum of squared centred values, ``within`` = m_u * SSD_u / (m_u - 1) where SSD_u
    is the sum of squared deviations from the item's own mean, and ``low``/``high`` its range.
    Items with fewer than two ratings get zeros (and an empty range), so they contribute nothing.
    With n = sum(size), alpha = 1 - (n - 1) * sum(within) / (n * sum(squares) - sum(total)^2),
    which is the coincidence-matrix definition with d(c, k) = (c - k)^2 summed in closed form.
    """

    size: FloatArray
    total: FloatArray
    squares: FloatArray
    within: FloatArray
    low: FloatArray
    high: FloatArray


def _column_stats(data: FloatArray) -> _ColumnStats:
    present = ~np.isnan(data)
    size = present.sum(axis=0).astype(np.float64)
    pairable = size >= 2
    size = np.where(pairable, size, 0.0)
    mask = present & pairable[np.newaxis, :]
    centre = float(data[mask].mean()) if mask.any() else 0.0
    values = np.where(mask, data - centre, 0.0)
    total = values.sum(axis=0)
    safe_size = np.where(pairable, size, 1.0)
    item_mean = total / safe_size
    ssd = np.where(mask, (values - item_mean) ** 2, 0.0).sum(axis=0)
    squares = ssd + size * item_mean**2
    within = np.where(pairable, size * ssd / np.maximum(safe_size - 1.0, 1.0), 0.0)
    low = np.where(mask, data, np.inf).min(axis=0)
    high = np.where(mask, data, -np.inf).max(axis=0)
    return _ColumnStats(size, total, squares, within, low, high)


def _alphas_for_resamples(stats: _ColumnStats, index: npt.NDArray[np.intp]) -> FloatArray:
    """Interval alpha of each resample; row r of ``index`` lists the items of resample r.

    Resamples with no pairable item are NaN (undefined); those whose pairable values are all
    identical are 1.0, matching ``interval_alpha``.
    """
    n = stats.size[index].sum(axis=1)
    total = stats.total[index].sum(axis=1)
    squares = stats.squares[index].sum(axis=1)
    within = stats.within[index].sum(axis=1)
    identical = stats.high[index].max(axis=1) == stats.low[index].min(axis=1)
    expected = n * squares - total**2
    valid = (n >= 2) & (expected > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        alphas = 1.0 - (n - 1.0) * within / expected
    alphas = np.where(valid, alphas, np.nan)
    return np.where((n >= 2) & identical, 1.0, alphas)


def bootstrap_alpha_interval(
    matrix: Sequence[Sequence[float | None]],
    *,
    iterations: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval for ``interval_alpha``, resampling items with replacement.

    Deterministic for a given ``seed``. Resamples in which alpha is undefined are skipped; the
    result is ``None`` when the matrix has fewer than two items or fewer than half of the
    resamples were usable (the interval would then describe a biased subset of resamples).
    """
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    data = _as_matrix(matrix)
    n_items = data.shape[1]
    if data.shape[0] < 2 or n_items < 2:
        return None
    stats = _column_stats(data)
    rng = np.random.default_rng(seed)
    blocks: list[FloatArray] = []
    for start in range(0, iterations, _BOOTSTRAP_CHUNK):
        rows = min(_BOOTSTRAP_CHUNK, iterations - start)
        index = rng.integers(0, n_items, size=(rows, n_items), dtype=np.intp)
        blocks.append(_alphas_for_resamples(stats, index))
    alphas = np.concatenate(blocks)
    alphas = alphas[~np.isnan(alphas)]
    if alphas.size < max(2, math.ceil(iterations / 2)):
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(alphas, [tail, 1.0 - tail])
    return float(low), float(high)


# --------------------------------------------------------------------------- kappa


def fleiss_kappa(calls: Sequence[Sequence[str | None]]) -> float | None:
    """Fleiss' kappa for categorical calls, with any number of raters per subject.

    ``calls[j][i]`` is judge j's category for subject i (``None`` = missing). Subjects with fewer
    than two ratings are dropped. P_i = sum_k n_ik(n_ik - 1) / (n_i(n_i - 1)), P_bar is their
    mean, p_k pools every retained rating and P_e = sum_k p_k^2. If only one category was ever
    used, P_e = 1 and necessarily P_bar = 1: we return 1.0 (perfect agreement) instead of 0/0.
    Returns ``None`` when no subject has two or more ratings.
    """
    width = len(calls[0]) if calls else 0
    if any(len(row) != width for row in calls):
        raise ValueError("every judge must have a call (or None) for every subject")
    subjects: list[Counter[str]] = []
    for i in range(width):
        counts = Counter(call for row in calls if (call := row[i]) is not None)
        if counts.total() >= 2:
            subjects.append(counts)
    if not subjects:
        return None
    pooled: Counter[str] = Counter()
    agreement = 0.0
    for counts in subjects:
        n_i = counts.total()
        agreement += sum(c * (c - 1) for c in counts.values()) / (n_i * (n_i - 1))
        pooled.update(counts)
    if len(pooled) == 1:
        return 1.0
    p_bar = agreement / len(subjects)
    n_total = pooled.total()
    p_e = sum((c / n_total) ** 2 for c in pooled.values())
    return (p_bar - p_e) / (1.0 - p_e)


# --------------------------------------------------------------------------- calibration


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation."""
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std())


def calibrate(
    scores: Mapping[str, Sequence[float | None]],
    history: Mapping[str, Sequence[float]] | None = None,
    *,
    min_history: int = 20,
    prior_strength: float = 20.0,
) -> dict[str, list[float | None]]:
    """Put every judge on the panel's scale, using each judge's past scores.

    ``calibrated = panel_mean + panel_sd * (x - judge_mean) / judge_sd``, where the panel
    statistics pool every judge's history. A judge with fewer than ``min_history`` past scores
    has its mean and sd shrunk toward the panel's with weight ``w = n / (n + prior_strength)``
    on its own statistics (so a judge with no history is left unchanged). A judge sd of 0 is
    replaced by the panel sd; if the panel sd is 0 too, only the shift is applied. Without any
    history the scores are returned unchanged. Standard deviations are population ones.
    """
    if min_history < 0 or prior_strength < 0:
        raise ValueError("min_history and prior_strength must not be negative")
    pooled = [float(v) for past in (history or {}).values() for v in past]
    if not pooled:
        return {judge: list(row) for judge, row in scores.items()}
    panel_mean, panel_sd = _mean_sd(pooled)
    result: dict[str, list[float | None]] = {}
    for judge, row in scores.items():
        past = (history or {}).get(judge, ())
        mean, sd = _mean_sd(past) if past else (panel_mean, panel_sd)
        if len(past) < min_history:
            w = len(past) / (len(past) + prior_strength) if past else 0.0
            mean = w * mean + (1.0 - w) * panel_mean
            sd = w * sd + (1.0 - w) * panel_sd
        if sd == 0.0:
            sd = panel_sd
        scale = panel_sd / sd if sd > 0.0 else 1.0
        result[judge] = [None if x is None else panel_mean + scale * (x - mean) for x in row]
    return result


# --------------------------------------------------------------------------- aggregation


def _item_count(scores: Mapping[str, Sequence[float | None]]) -> int:
    lengths = {len(row) for row in scores.values()}
    if len(lengths) > 1:
        raise ValueError("every judge must have a score (or None) for every item")
    return lengths.pop() if lengths else 0


def weighted_scores(
    scores: Mapping[str, Sequence[float | None]],
    weights: Mapping[str, float] | None = None,
) -> list[float | None]:
    """Per-item weighted mean across judges, ignoring missing scores.

    Judges absent from ``weights`` weigh 1.0. An item is ``None`` when no judge with a positive
    weight rated it. Negative weights are rejected.
    """
    weights = weights or {}
    if any(w < 0 for w in weights.values()):
        raise ValueError("judge weights must not be negative")
    result: list[float | None] = []
    for i in range(_item_count(scores)):
        pairs = [
            (weights.get(j, 1.0), float(x))
            for j, row in scores.items()
            if (x := row[i]) is not None
        ]
        total_weight = sum(w for w, _ in pairs)
        if total_weight <= 0:
            result.append(None)
            continue
        result.append(sum(w * x for w, x in pairs) / total_weight)
    return result


def _item_spreads(
    items: Sequence[str], scores: Mapping[str, Sequence[float | None]]
) -> list[ItemSpread]:
    """Spread of every item that at least two judges rated (one rating shows no agreement)."""
    if scores and _item_count(scores) != len(items):
        raise ValueError("scores must have one entry per item")
    spreads: list[ItemSpread] = []
    for i, label in enumerate(items):
        ratings = {j: float(v) for j, row in scores.items() if (v := row[i]) is not None}
        if len(ratings) < 2:
            continue
        values = np.fromiter(ratings.values(), dtype=np.float64)
        spreads.append(
            ItemSpread(
                item=label,
                mean=float(values.mean()),
                spread=float(values.max() - values.min()),
                stdev=float(values.std()),
                ratings=ratings,
            )
        )
    return spreads


def divergence(
    items: Sequence[str],
    scores: Mapping[str, Sequence[float | None]],
    winners: Mapping[str, str | None],
    *,
    agree_spread: float = 1.0,
    top_n: int = 3,
    thresholds: Thresholds = Thresholds(),
) -> Divergence:
    """Where the judges agree (narrow spreads), the widest splits, and whether it is hopeless.

    Items rated by fewer than two judges appear in neither list. Spreads are compared with
    ``agree_spread`` and ``thresholds.irreconcilable_spread`` with a 1e-9 slack for float noise.
    """
    if top_n < 0:
        raise ValueError("top_n must not be negative")
    spreads = _item_spreads(items, scores)
    agreements = sorted(
        (s for s in spreads if s.spread <= agree_spread + _SPREAD_EPS),
        key=lambda s: (s.spread, s.item),
    )
    wide = sorted(
        (s for s in spreads if s.spread > agree_spread + _SPREAD_EPS),
        key=lambda s: (-s.spread, s.item),
    )
    winner_split = len({w for w in winners.values() if w is not None}) > 1
    widest = max((s.spread for s in spreads), default=0.0)
    irreconcilable = winner_split and widest >= thresholds.irreconcilable_spread - _SPREAD_EPS
    return Divergence(
        agreements=agreements,
        disagreements=wide[:top_n],
        winner_split=winner_split,
        irreconcilable=irreconcilable,
    )


# --------------------------------------------------------------------------- policy


def band_for(alpha: float | None, thresholds: Thresholds = Thresholds()) -> Band:
    """The agreement band of an alpha; ``None`` or NaN -> "review" (cannot tell, a human looks)."""
    if alpha is None or math.isnan(alpha):
        return "review"
    if alpha >= thresholds.high:
        return "high"
    if alpha >= thresholds.tentative:
        return "tentative"
    if alpha >= thresholds.escalate:
        return "review"
    return "contentious"


def route(
    alpha: float | None,
    irreconcilable: bool,
    thresholds: Thresholds = Thresholds(),
) -> Routing:
    """What happens to the verdict. An irreconcilable panel is never published automatically:
    it goes at least to human review, and is escalated when the band is contentious."""
    band = band_for(alpha, thresholds)
    if irreconcilable and band != "contentious":
        return "human_review"
    return _ROUTING_FOR_BAND[band]


def summarise(
    items: Sequence[str],
    scores: Mapping[str, Sequence[float | None]],
    winners: Mapping[str, str | None],
    calls: Sequence[Sequence[str | None]],
    *,
    weights: Mapping[str, float] | None = None,
    history: Mapping[str, Sequence[float]] | None = None,
    thresholds: Thresholds = Thresholds(),
    bootstrap_iterations: int = 1000,
    seed: int = 0,
) -> tuple[ConsensusStats, Divergence, list[float | None]]:
    """Everything the report needs, from raw judge output.

    Scores are calibrated first; alpha (judges in sorted-name order x items), its bootstrap
    interval, the divergence and the weighted per-item scores all use the calibrated scores, so
    a judge's habitual leniency is not mistaken for disagreement. Kappa is over ``calls``.
    """
    calibrated = calibrate(scores, history)
    matrix = [calibrated[judge] for judge in sorted(calibrated)]
    alpha = interval_alpha(matrix)
    interval = bootstrap_alpha_interval(matrix, iterations=bootstrap_iterations, seed=seed)
    split = divergence(items, calibrated, winners, thresholds=thresholds)
    stats = ConsensusStats(
        alpha=alpha,
        alpha_interval=interval,
        kappa=fleiss_kappa(calls),
        band=band_for(alpha, thresholds),
        routing=route(alpha, split.irreconcilable, thresholds),
        irreconcilable=split.irreconcilable,
    )
    return stats, split, weighted_scores(calibrated, weights)
