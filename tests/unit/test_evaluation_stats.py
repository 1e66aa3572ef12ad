"""engine/evaluation/stats.py against published values on fixed inputs.

References:
* Wilson intervals: Newcombe (1998) "Two-sided confidence intervals for the single proportion:
  comparison of seven methods", Stat Med 17:857-872, Table II, method 3 (81/263, 15/148, 0/20,
  1/29); also Agresti and Coull (1998).
* McNemar exact p: the binomial(b + c, 1/2) two-sided tail; b=1, c=6 -> 2 * 8/128 = 0.125.
* Paired difference: Newcombe (1998) "Improved confidence intervals for the difference between
  binomial proportions based on paired data", Stat Med 17:2635-2650, method 10, as worked in
  Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables" (2017), chapter 8,
  for Cavo et al. (2012): table [[59, 6], [16, 80]] -> -0.0621 (-0.1186 to -0.0046), and the
  exact conditional McNemar p of that table, 0.0525.
"""

from __future__ import annotations

import math

import pytest

from engine.evaluation.stats import mcnemar_exact, paired, wilson


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_matches_newcombe_1998_table_ii(k: int, n: int, low: float, high: float) -> None:
    got = wilson(k, n)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_edges_are_exact_and_symmetric() -> None:
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    low, high = wilson(0, 10)
    assert (1 - high, 1 - low) == pytest.approx(wilson(10, 10))
    assert wilson(0, 10)[1] == pytest.approx(0.2775, abs=5e-5)   # Newcombe: 0/10 -> 0.2775
    assert wilson(0, 0) == (0.0, 1.0)                               # nothing known yet


def test_wilson_z_widens_the_interval() -> None:
    narrow, wide = wilson(30, 60, z=1.0), wilson(30, 60, z=2.575829)
    assert wide[0] < narrow[0] < 0.5 < narrow[1] < wide[1]


@pytest.mark.parametrize(("k", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_wilson_refuses_impossible_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(k, n)


@pytest.mark.parametrize(("b", "c", "p"), [
    (1, 6, 0.125),
    (6, 1, 0.125),
    (0, 0, 1.0),
    (3, 3, 1.0),
    (0, 5, 2 / 32),
    (6, 16, 0.052478790283203125),      # Cavo et al.: 2 * P(X <= 6), X ~ Bin(22, 1/2)
    (2, 3, 1.0),                         # the doubled tail passes 1: capped
])
def test_mcnemar_exact(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)


def test_mcnemar_exact_stays_exact_for_thousands_of_discordant_pairs() -> None:
    p = mcnemar_exact(4_000, 4_300)
    assert 0.0 < p < 0.05 and math.isfinite(p)
    assert mcnemar_exact(5_000, 5_000) == 1.0


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)


def _table(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return a, b


def test_paired_matches_newcombe_method_10_on_cavo_2012() -> None:
    result = paired(*_table(59, 6, 16, 80))
    assert result.diff == pytest.approx(-10 / 161)
    assert round(result.diff, 4) == -0.0621
    assert round(result.low, 4) == -0.1186 and round(result.high, 4) == -0.0046
    assert (result.b, result.c) == (6, 16)
    assert round(result.p_value, 4) == 0.0525


def test_paired_is_antisymmetric_and_counts_only_discordant_items() -> None:
    a, b = _table(20, 9, 3, 8)
    forward, backward = paired(a, b), paired(b, a)
    assert forward.diff == pytest.approx(-backward.diff)
    assert (forward.low, forward.high) == pytest.approx((-backward.high, -backward.low))
    assert (forward.b, forward.c) == (backward.c, backward.b) == (9, 3)
    assert forward.p_value == backward.p_value == mcnemar_exact(9, 3)


@pytest.mark.parametrize("table", [(0, 0, 0, 10), (10, 0, 0, 0), (0, 10, 0, 0), (0, 0, 10, 0),
                                   (5, 0, 0, 5), (1, 0, 0, 0)])
def test_paired_never_degenerates_at_the_edges(table: tuple[int, int, int, int]) -> None:
    result = paired(*_table(*table))
    assert -1.0 <= result.low <= result.diff <= result.high <= 1.0
    assert result.low < result.high            # some uncertainty is always said


def test_paired_identical_results_have_an_interval_around_zero() -> None:
    result = paired(*_table(30, 0, 0, 30))
    assert result.diff == 0.0 and result.low < 0.0 < result.high and result.p_value == 1.0


def test_paired_with_no_items_says_nothing_is_known() -> None:
    result = paired([], [])
    assert (result.diff, result.low, result.high, result.p_value) == (0.0, -1.0, 1.0, 1.0)


def test_paired_refuses_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="same items"):
        paired([True, False], [True])
