"""Statistics of an evaluation: Wilson intervals, McNemar's exact test, paired differences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials ((0, 1) when n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact binomial p-value of McNemar's test on the discordant pairs b and c."""
    n = b + c
    if n == 0:
        return 1.0
    low = min(b, c)
    tail: float = sum(math.comb(n, i) for i in range(low + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class Paired:
    diff: float
    low: float
    high: float
    b: int
    c: int
    p_value: float


def paired(a: Sequence[bool], b: Sequence[bool]) -> Paired:
    """a minus b over paired outcomes, with a Wald interval with continuity correction."""
    n = len(a)
    if n != len(b):
        raise ValueError("paired outcomes must have the same length")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    if n == 0:
        return Paired(0.0, -1.0, 1.0, 0, 0, 1.0)
    diff = (only_a - only_b) / n
    se = math.sqrt(max(only_a + only_b - (only_a - only_b) ** 2 / n, 0.0)) / n
    half = 1.959964 * se + 1 / n
    return Paired(diff, max(-1.0, diff - half), min(1.0, diff + half), only_a, only_b,
                  mcnemar_exact(only_a, only_b))
