"""One reported number with its evidence (`Figure`), and the pieces of inference that need no
array library: the normal quantile and p-value, and the Wilson interval. Kept apart from
inference.py (numpy), so that what only samples or counts (the spot-check sampler, routing
rates) loads no numpy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

FigureStatus = Literal["ok", "not_enough_data"]

#: Relative slack when comparing probabilities of outcomes in the exact test (R's binom.test
#: uses the same 1 + 1e-7), so float noise does not drop an outcome as likely as the observed.
_RELATIVE_SLACK = 1.0 + 1e-7


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One reported number with its evidence; ``status`` says whether there was enough data.

    ``estimate`` is the headline value (a rate, a correlation, an offset in rubric points),
    ``expected`` what no bias would predict where that exists, ``p_value`` the raw two-sided
    p-value and ``adjusted_p`` the same after Holm's correction over the whole report.
    ``flagged`` is set only by the report, from the adjusted p-value and a minimum effect.
    """

    name: str
    status: FigureStatus
    n: int
    min_n: int
    estimate: float | None = None
    interval: tuple[float, float] | None = None
    confidence: float = 0.95
    expected: float | None = None
    p_value: float | None = None
    adjusted_p: float | None = None
    flagged: bool = False
    detail: Mapping[str, float] = field(default_factory=dict)
    note: str = ""


def not_enough_data(name: str, n: int, min_n: int, note: str = "") -> Figure:
    """The explicit answer below a minimum sample size: the count, the minimum, no estimate."""
    reason = note or f"not enough data: {n} of the {min_n} needed"
    return Figure(name=name, status="not_enough_data", n=n, min_n=min_n, note=reason)


def z_for(confidence: float) -> float:
    """The two-sided standard normal quantile for a confidence level (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def normal_p_value(z: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def wilson_interval(
    successes: float, n: float, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson score interval for successes out of n (n may be an effective, weighted size)."""
    if n <= 0:
        raise ValueError("n must be positive")
    if not 0.0 <= successes <= n * _RELATIVE_SLACK:
        raise ValueError("successes must lie between 0 and n")
    return wilson_score(successes, n, z_for(confidence))


def wilson_score(successes: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson interval's formula for a normal quantile `z`; the caller checks its inputs."""
    rate = min(successes / n, 1.0)
    denominator = 1.0 + z * z / n
    centre = (rate + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / n + z * z / (4.0 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


__all__ = ["Figure", "FigureStatus", "normal_p_value", "not_enough_data", "wilson_interval",
           "wilson_score", "z_for"]
