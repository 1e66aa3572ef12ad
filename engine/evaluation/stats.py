"""The statistics an evaluation reports, on counts small enough to be exact.

* `wilson` — Wilson's score interval for an accuracy k/n (good coverage at small n and near 0
  or 1, where the textbook Wald interval fails; Newcombe 1998, Stat Med 17:857, method 3).
* `mcnemar_exact` — McNemar's exact test of two modes on the same items: only the discordant
  items count (b: the first right and the second wrong; c: the reverse), and under "no
  difference" each is equally likely either way, so the two-sided p is a binomial(b + c, 1/2)
  tail, doubled and capped at 1.
* `paired` — the difference of two accuracies on the same items with Newcombe's hybrid score
  interval for paired data (Newcombe 1998, Stat Med 17:2635, method 10): the Wilson limits of
  each accuracy combined by square-and-add, corrected for the correlation of the pairs. It stays
  inside [-1, 1], is never degenerate at 0 or n discordant pairs, and has near-nominal coverage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from engine.oversight.inference import wilson_score

Z95 = 1.959964


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials; (0, 1) when n is 0 (nothing known)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n (got k={k}, n={n})")
    if n == 0:
        return 0.0, 1.0
    low, high = wilson_score(k, n, z)
    return (0.0 if k == 0 else low), (1.0 if k == n else high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (1.0 when b == c)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0 (got b={b}, c={c})")
    n = b + c
    if b == c:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class Paired:
    """Accuracy of a minus accuracy of b on the same items, its 95% interval, the discordant
    counts (b: a right, b wrong; c: a wrong, b right) and McNemar's exact p."""

    diff: float
    low: float
    high: float
    b: int
    c: int
    p_value: float


def _phi(both: int, only_a: int, only_b: int, neither: int) -> float:
    """Newcombe's correlation of the two accuracies, with his continuity correction: the
    cross-product is moved n/2 towards 0 when positive and left alone when negative."""
    n = both + only_a + only_b + neither
    product = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if product == 0:
        return 0.0
    cross = both * neither - only_a * only_b
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(product)
    return cross / math.sqrt(product) if cross < 0 else 0.0


def paired(a: Sequence[bool], b: Sequence[bool]) -> Paired:
    """a minus b over the same items, with Newcombe's method-10 interval (z for 95%)."""
    if len(a) != len(b):
        raise ValueError(f"paired results need the same items (got {len(a)} and {len(b)})")
    n = len(a)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    p_value = mcnemar_exact(only_a, only_b)
    if n == 0:
        return Paired(diff=0.0, low=-1.0, high=1.0, b=0, c=0, p_value=p_value)
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson(both + only_a, n)
    l2, u2 = wilson(both + only_b, n)
    phi = _phi(both, only_a, only_b, n - both - only_a - only_b)
    diff = p1 - p2
    below = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return Paired(diff=diff, low=max(-1.0, diff - below), high=min(1.0, diff + above),
                  b=only_a, c=only_b, p_value=p_value)
