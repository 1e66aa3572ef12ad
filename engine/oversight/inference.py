"""Exact tests and intervals the judge and routing audits report with, in numpy and math only.

* ``wilson_interval`` — score interval for a proportion: good coverage at small n and near 0 or 1,
  and defined for the non-integer effective sample size of a weighted count.
* ``poisson_binomial_test`` — exact two-sided test of a count of successes whose trials have
  unequal probabilities (the binomial test is the equal-probability case).
* ``mean_interval`` — normal interval of a mean; callers report means only above a minimum n.
* ``spearman`` and ``fisher_interval`` — rank correlation with a Fisher-z interval.
* ``holm`` — step-down adjustment so a report of many tests keeps its family-wise error rate.
* ``Figure`` — one reported number with its sample size, interval and test, or "not enough data".

scipy would give the same numbers; these few formulas do not earn a dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.oversight.figure import (
    _RELATIVE_SLACK,
    Figure,
    FigureStatus,
    normal_p_value,
    not_enough_data,
    wilson_interval,
    wilson_score,
    z_for,
)

__all__ = [
    "Figure",
    "FigureStatus",
    "fisher_interval",
    "holm",
    "mean_interval",
    "normal_p_value",
    "not_enough_data",
    "pearson",
    "poisson_binomial_pmf",
    "poisson_binomial_test",
    "ranks",
    "spearman",
    "wilson_interval",
    "wilson_score",
    "z_for",
]

FloatArray = npt.NDArray[np.float64]



def poisson_binomial_pmf(probabilities: Sequence[float]) -> FloatArray:
    """P(K = k) for k = 0..n, K the number of successes of independent trials with these
    probabilities; exact by dynamic programming (O(n^2), a few ms for thousands of trials)."""
    p = np.asarray(probabilities, dtype=np.float64)
    if p.size and (np.isnan(p).any() or p.min() < 0.0 or p.max() > 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    pmf = np.zeros(p.size + 1, dtype=np.float64)
    pmf[0] = 1.0
    for i, prob in enumerate(p, start=1):
        pmf[1 : i + 1] = pmf[1 : i + 1] * (1.0 - prob) + pmf[0:i] * prob
        pmf[0] *= 1.0 - prob
    return pmf


def poisson_binomial_test(observed: int, probabilities: Sequence[float]) -> float:
    """Exact two-sided p-value: the total probability of every count no likelier than the
    observed one (the rule of R's ``binom.test``; with equal probabilities it is that test)."""
    if not 0 <= observed <= len(probabilities):
        raise ValueError("observed must lie between 0 and the number of trials")
    pmf = poisson_binomial_pmf(probabilities)
    bar = pmf[observed] * _RELATIVE_SLACK
    return min(1.0, float(pmf[pmf <= bar].sum()))


def mean_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, tuple[float, float]]:
    """Mean, its standard error (sample sd / sqrt(n)) and the normal interval; n >= 2."""
    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        raise ValueError("a mean interval needs at least two values")
    mean = float(data.mean())
    se = float(data.std(ddof=1)) / math.sqrt(data.size)
    half = z_for(confidence) * se
    return mean, se, (mean - half, mean + half)


def ranks(values: Sequence[float]) -> FloatArray:
    """1-based ranks, ties sharing their average rank (what Spearman's rho needs)."""
    data = np.asarray(values, dtype=np.float64)
    order = np.argsort(data, kind="mergesort")
    positions = np.empty(data.size, dtype=np.float64)
    positions[order] = np.arange(1, data.size + 1, dtype=np.float64)
    _, inverse, counts = np.unique(data, return_inverse=True, return_counts=True)
    totals = np.bincount(inverse, weights=positions)
    return np.asarray(totals[inverse] / counts[inverse], dtype=np.float64)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; ``None`` when either variable is constant (r is undefined)."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.size != b.size:
        raise ValueError("x and y must have the same length")
    if a.size < 2:
        return None
    a = a - a.mean()
    b = b - b.mean()
    denominator = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    if denominator == 0.0:
        return None
    return max(-1.0, min(1.0, float((a * b).sum()) / denominator))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's r of the (tie-averaged) ranks."""
    return pearson(list(ranks(x)), list(ranks(y)))


#: Variance inflation of Fisher's z for Spearman's rho (Fieller, Hartley and Pearson, 1957).
SPEARMAN_VARIANCE = 1.06


def fisher_interval(
    r: float, n: int, confidence: float = 0.95, *, variance: float = 1.0
) -> tuple[tuple[float, float], float]:
    """Interval and two-sided p-value (null: no correlation) for a correlation from n pairs,
    through Fisher's z with standard error sqrt(variance / (n - 3)); n >= 4."""
    if n < 4:
        raise ValueError("a Fisher-z interval needs at least four pairs")
    z = math.atanh(max(-1.0 + 1e-12, min(1.0 - 1e-12, r)))
    se = math.sqrt(variance / (n - 3))
    half = z_for(confidence) * se
    return (math.tanh(z - half), math.tanh(z + half)), normal_p_value(z / se)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (monotone, capped at 1)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
