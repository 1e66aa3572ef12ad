"""From a judge panel's scores to what happens next, with pure functions only:

* ``calibrate`` — removes each judge's habitual leniency/harshness using its scoring history,
  shrinking short histories toward the panel so one odd debate does not swing a judge.
* ``weighted_scores`` / ``divergence`` — the panel's per-item score and where the judges split.
* ``band_for`` / ``route`` — the policy: how much agreement is enough to publish automatically,
  and when a human must look.
* ``summarise`` — all of it at once, with alpha and kappa from engine/reading/agreement.py.

Conventions as in engine/reading/agreement.py: ``None`` marks a missing rating; malformed input
raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.reading.agreement import bootstrap_alpha_interval, fleiss_kappa, interval_alpha
from engine.settings import ThresholdSpec
from engine.vocabulary import ROUTING_FOR_BAND, Band, Routing

__all__ = [
    "ConsensusStats",
    "Divergence",
    "ItemSpread",
    "band_for",
    "calibrate",
    "divergence",
    "route",
    "summarise",
    "weighted_scores",
]

#: Absolute slack when comparing score spreads with their limits, so that a spread which is
#: 1.0 on paper but 1.0000000000000009 in binary floating point still counts as 1.0.
_SPREAD_EPS = 1e-9
DEFAULT_THRESHOLDS = ThresholdSpec()


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
    thresholds: ThresholdSpec = DEFAULT_THRESHOLDS,
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


def band_for(alpha: float | None, thresholds: ThresholdSpec = DEFAULT_THRESHOLDS) -> Band:
    """The agreement band of an alpha; ``None`` or NaN -> review (cannot tell, a human looks)."""
    if alpha is None or math.isnan(alpha):
        return Band.REVIEW
    if alpha >= thresholds.high:
        return Band.HIGH
    if alpha >= thresholds.tentative:
        return Band.TENTATIVE
    if alpha >= thresholds.escalate:
        return Band.REVIEW
    return Band.CONTENTIOUS


def route(
    alpha: float | None,
    irreconcilable: bool,
    thresholds: ThresholdSpec = DEFAULT_THRESHOLDS,
) -> Routing:
    """What happens to the verdict. An irreconcilable panel is never published automatically:
    it goes at least to human review, and is escalated when the band is contentious."""
    band = band_for(alpha, thresholds)
    if irreconcilable and band is not Band.CONTENTIOUS:
        return Routing.HUMAN_REVIEW
    return ROUTING_FOR_BAND[band]


def summarise(
    items: Sequence[str],
    scores: Mapping[str, Sequence[float | None]],
    winners: Mapping[str, str | None],
    calls: Sequence[Sequence[str | None]],
    *,
    weights: Mapping[str, float] | None = None,
    history: Mapping[str, Sequence[float]] | None = None,
    thresholds: ThresholdSpec = DEFAULT_THRESHOLDS,
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
