"""Suggested alpha thresholds from the reviewers' decisions: the cut-offs that keep what is
published upheld at a target rate while sending the fewest results to review.

Meaning of the cut-offs, as in ``engine.settings.ThresholdSpec``: alpha >= high is auto-approved,
tentative <= alpha < high is published as tentative, lower goes to a reviewer, and below
escalate it is escalated. Labels come from two samples: every routed result (probability 1)
and the spot-checked published ones (probability = the spot-check fraction); each label is
weighed by the inverse of that probability, so rates describe all results, not the sample.
A suggestion only: applying it is an explicit, audited operator action.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from engine.oversight.inference import Figure, not_enough_data, wilson_interval
from engine.oversight.routing_audit import PUBLISHED, ROUTED, RoutedOutcome
from engine.reading.verdicts import band_for, route
from engine.settings import ThresholdSpec as Thresholds
from engine.vocabulary import Band

__all__ = [
    "BandCount",
    "SuggestionPolicy",
    "ThresholdEvaluation",
    "ThresholdSuggestion",
    "evaluate_thresholds",
    "suggest_thresholds",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
BANDS: tuple[Band, ...] = tuple(Band)
SuggestionStatus = Literal["ok", "not_enough_data", "target_unreachable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SuggestionPolicy:
    """What the suggestion must achieve, and how sure the data must make us.

    ``target``: upheld share of auto-approved results (alpha >= high). ``tentative_target``:
    upheld share of everything published without review (alpha >= tentative); equal to
    ``target`` for no tentative band. ``escalate_rate``: escalate where reviewers overturn at
    least this share (the cut minimises rate-weighted errors on both sides of it).
    ``criterion``: "lower_bound" requires the Wilson lower bound to reach the target,
    "point" the estimate itself. A rate counts only from ``min_labels`` effective labels.
    """

    target: float = 0.95
    tentative_target: float = 0.90
    escalate_rate: float = 0.50
    criterion: Literal["lower_bound", "point"] = "lower_bound"
    confidence: float = 0.95
    min_labels: int = 30
    step: float = 0.01

    def __post_init__(self) -> None:
        for name in ("target", "tentative_target", "escalate_rate"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must lie strictly between 0 and 1")
        if not 0.0 < self.step <= 0.5:
            raise ValueError("step must lie in (0, 0.5]")


@dataclass(frozen=True, slots=True, kw_only=True)
class BandCount:
    """Results in one band; of them, labelled ones (raw counts) and how reviewers decided."""

    results: int
    labelled: int
    upheld: int
    overturned: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdEvaluation:
    """How a set of thresholds does on the history: counts per band, the weighted upheld rate
    of what they auto-approve and publish, the overturned rate of what they escalate, and the
    share of all results they send to review."""

    thresholds: Thresholds
    bands: dict[Band, BandCount]
    auto_approved_upheld: Figure
    published_upheld: Figure
    escalated_overturned: Figure
    review_share: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdSuggestion:
    """The proposal (``suggested`` None unless status is "ok") and the evidence behind it."""

    status: SuggestionStatus
    reason: str
    current: ThresholdEvaluation
    suggested: ThresholdEvaluation | None
    labelled: int
    effective_labels: float


@dataclass(frozen=True, slots=True)
class _Labels:
    """The labelled outcomes as arrays: alpha (NaN if unknown), weight, upheld, irreconcilable."""

    alpha: FloatArray
    weight: FloatArray
    upheld: FloatArray
    irreconcilable: BoolArray

    @classmethod
    def of(cls, outcomes: Sequence[RoutedOutcome]) -> _Labels:
        labelled = [o for o in outcomes if o.label is not None]
        return cls(
            alpha=np.array([math.nan if o.alpha is None else o.alpha for o in labelled]),
            weight=np.array([1.0 / o.inclusion_probability for o in labelled]),
            upheld=np.array([1.0 if o.upheld else 0.0 for o in labelled]),
            irreconcilable=np.array([o.irreconcilable for o in labelled], dtype=np.bool_),
        )

    def published_from(self, cut: float) -> BoolArray:
        with np.errstate(invalid="ignore"):
            return np.asarray((self.alpha >= cut) & ~self.irreconcilable, dtype=np.bool_)

    def below(self, cut: float) -> BoolArray:
        with np.errstate(invalid="ignore"):
            return np.asarray(self.alpha < cut, dtype=np.bool_)


def _effective_n(weight: FloatArray) -> float:
    """Kish's effective sample size of a weighted sample."""
    return float(weight.sum() ** 2 / (weight**2).sum()) if weight.size else 0.0


def _weighted_rate(weight: FloatArray, hits: FloatArray) -> tuple[float | None, float]:
    total = float(weight.sum())
    return (float((weight * hits).sum()) / total if total > 0 else None), _effective_n(weight)


def _meets(weight: FloatArray, hits: FloatArray, target: float, policy: SuggestionPolicy
           ) -> bool:
    judged = _judged(weight, hits, policy)
    return judged is not None and judged[1] >= target


def _figure(name: str, weight: FloatArray, hits: FloatArray, policy: SuggestionPolicy,
            note: str) -> Figure:
    rate, n_eff = _weighted_rate(weight, hits)
    if rate is None or n_eff < policy.min_labels:
        return not_enough_data(name, int(weight.size), policy.min_labels,
                               f"not enough data: {n_eff:.1f} effective labels of the "
                               f"{policy.min_labels} needed")
    return Figure(name=name, status="ok", n=int(weight.size), min_n=policy.min_labels,
                  estimate=rate, interval=wilson_interval(rate * n_eff, n_eff, policy.confidence),
                  confidence=policy.confidence, detail={"effective_n": n_eff}, note=note)


def _bands(outcomes: Sequence[RoutedOutcome], thresholds: Thresholds) -> dict[Band, BandCount]:
    counts = {band: [0, 0, 0, 0] for band in BANDS}
    for outcome in outcomes:
        row = counts[band_for(outcome.alpha, thresholds)]
        row[0] += 1
        if outcome.label is not None:
            row[1] += 1
            row[2 if outcome.upheld else 3] += 1
    return {band: BandCount(results=r[0], labelled=r[1], upheld=r[2], overturned=r[3])
            for band, r in counts.items()}


def evaluate_thresholds(outcomes: Sequence[RoutedOutcome], thresholds: Thresholds,
                        policy: SuggestionPolicy = SuggestionPolicy()) -> ThresholdEvaluation:
    """What these thresholds would have done to the history (routing by ``consensus.route``)."""
    routes = [route(o.alpha, o.irreconcilable, thresholds) for o in outcomes]
    labels = [(o, r) for o, r in zip(outcomes, routes, strict=True) if o.label is not None]

    def arrays(keep: frozenset[str], overturned: bool) -> tuple[FloatArray, FloatArray]:
        chosen = [o for o, r in labels if r in keep]
        hits = [float(bool(o.upheld) != overturned) for o in chosen]
        return np.array([1.0 / o.inclusion_probability for o in chosen]), np.array(hits)

    return ThresholdEvaluation(
        thresholds=thresholds, bands=_bands(outcomes, thresholds),
        auto_approved_upheld=_figure("auto_approved_upheld",
                                     *arrays(frozenset({"auto_approve"}), False), policy,
                                     "weighted share of auto-approved results upheld"),
        published_upheld=_figure("published_upheld", *arrays(PUBLISHED, False), policy,
                                 "weighted share of published results upheld"),
        escalated_overturned=_figure("escalated_overturned",
                                     *arrays(frozenset({"escalate"}), True), policy,
                                     "weighted share of escalated results overturned"),
        review_share=(sum(r in ROUTED for r in routes) / len(routes)) if routes else None,
    )


def _grid(outcomes: Sequence[RoutedOutcome], step: float) -> list[float]:
    """Candidate cut-offs: multiples of step from the lowest alpha seen (or 0) up to 1."""
    alphas = [o.alpha for o in outcomes if o.alpha is not None and not math.isnan(o.alpha)]
    low = math.floor(min([0.0, *alphas]) / step)
    return [round(k * step, 10) for k in range(low, math.floor(1.0 / step + 1e-9) + 1)]


def _lowest_meeting(labels: _Labels, grid: Sequence[float], target: float,
                    policy: SuggestionPolicy) -> float | None:
    """The lowest cut whose published set (alpha >= cut, reconcilable) meets the target."""
    for cut in grid:
        mask = labels.published_from(cut)
        if _meets(labels.weight[mask], labels.upheld[mask], target, policy):
            return cut
    return None


def _judged(weight: FloatArray, hits: FloatArray, policy: SuggestionPolicy
            ) -> tuple[float, float] | None:
    """(rate, the value the criterion compares with the target), or None below min_labels."""
    rate, n_eff = _weighted_rate(weight, hits)
    if rate is None or n_eff < policy.min_labels:
        return None
    if policy.criterion == "point":
        return rate, rate
    return rate, wilson_interval(rate * n_eff, n_eff, policy.confidence)[0]


def _best_counted(labels: _Labels, grid: Sequence[float], policy: SuggestionPolicy
                  ) -> tuple[float, float, float] | None:
    """(cut, rate, judged value) of the cut that comes closest to a target, among those whose
    published set has enough labels: what to tell the operator when none meets it."""
    best: tuple[float, float, float] | None = None
    for cut in grid:
        mask = labels.published_from(cut)
        judged = _judged(labels.weight[mask], labels.upheld[mask], policy)
        if judged is not None and (best is None or judged[1] > best[2]):
            best = (cut, *judged)
    return best


def _escalate_cut(labels: _Labels, grid: Sequence[float], tentative: float,
                  policy: SuggestionPolicy) -> float | None:
    """Among labels below the tentative cut, the cut e minimising
    rate * (upheld below e) + (1 - rate) * (overturned in [e, tentative)), weighted: the Bayes
    boundary where the overturned share crosses ``escalate_rate``. Lowest e on ties."""
    reviewed = labels.below(tentative)
    if _effective_n(labels.weight[reviewed]) < policy.min_labels:
        return None
    rate = policy.escalate_rate
    best: tuple[float, float] | None = None
    for cut in (c for c in grid if c <= tentative):
        below = reviewed & labels.below(cut)
        above = reviewed & ~below
        loss = (rate * float((labels.weight * labels.upheld)[below].sum())
                + (1 - rate) * float((labels.weight * (1 - labels.upheld))[above].sum()))
        if best is None or loss < best[0] - 1e-12:
            best = (loss, cut)
    return None if best is None else best[1]


def suggest_thresholds(outcomes: Sequence[RoutedOutcome], current: Thresholds,
                       policy: SuggestionPolicy = SuggestionPolicy()) -> ThresholdSuggestion:
    """The lowest tentative cut-off whose published results meet ``tentative_target``, the
    lowest high cut-off at or above it meeting ``target``, and the escalate cut-off where
    reviewers mostly overturn; "not_enough_data" below ``min_labels`` effective labels,
    "target_unreachable" when no cut-off meets a target. Pass one preset's outcomes."""
    labels = _Labels.of(outcomes)
    n_eff = _effective_n(labels.weight)

    def answer(status: SuggestionStatus, reason: str,
               suggested: Thresholds | None = None) -> ThresholdSuggestion:
        return ThresholdSuggestion(
            status=status, reason=reason, current=evaluate_thresholds(outcomes, current, policy),
            suggested=None if suggested is None else evaluate_thresholds(outcomes, suggested,
                                                                         policy),
            labelled=int(labels.weight.size), effective_labels=n_eff)

    if n_eff < policy.min_labels:
        return answer("not_enough_data", f"not enough data: {n_eff:.1f} effective reviewer "
                                         f"labels of the {policy.min_labels} needed")
    grid = _grid(outcomes, policy.step)
    best = _best_counted(labels, grid, policy)
    if best is None:
        return answer("not_enough_data", "not enough data: no alpha cut-off has "
                                         f"{policy.min_labels} effective labels among results "
                                         "it would publish")
    tentative = _lowest_meeting(labels, grid, policy.tentative_target, policy)
    high = None if tentative is None else _lowest_meeting(
        labels, [c for c in grid if c >= tentative], policy.target, policy)
    if tentative is None or high is None:
        target = policy.tentative_target if tentative is None else policy.target
        return answer("target_unreachable",
                      f"no alpha cut-off keeps {target:.0%} of what it publishes upheld "
                      f"(closest: {best[1]:.1%} upheld from alpha {best[0]:.2f}, judged "
                      f"{best[2]:.1%} by the {policy.criterion.replace('_', ' ')}); keep "
                      "reviewing, or spot-check more to narrow the intervals")
    escalate = _escalate_cut(labels, grid, tentative, policy)
    reason = "meets both targets with the fewest results sent to review"
    if escalate is None:
        escalate = min(current.escalate, tentative)
        reason += "; too few labels below the tentative cut-off to move escalate"
    suggested = current.model_copy(update={"high": high, "tentative": tentative,
                                           "escalate": escalate})
    return answer("ok", reason, suggested)
