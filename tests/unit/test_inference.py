"""Tests for engine.oversight.inference: published reference values, and independent computations on
seeded random data (brute-force enumeration, math.comb, the textbook Spearman formula)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from engine.oversight.inference import (
    fisher_interval,
    holm,
    mean_interval,
    normal_p_value,
    pearson,
    poisson_binomial_pmf,
    poisson_binomial_test,
    ranks,
    spearman,
    wilson_interval,
    z_for,
)


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3.
@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_interval_matches_newcombe(successes: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(successes, n) == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize(("successes", "n"), [(5, 0), (-1, 10), (11, 10)])
def test_wilson_interval_refuses_impossible_counts(successes: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n)


# R: binom.test(c(682, 243), p = 3/4) -> 0.3825 (its help page); binom.test(7, 20) -> 0.2632;
# binom.test(9, 10) -> 0.02148; binom.test(0, 10) -> 0.001953.
@pytest.mark.parametrize(("k", "n", "p", "expected"), [
    (682, 925, 0.75, 0.3825),
    (7, 20, 0.5, 0.2632),
    (9, 10, 0.5, 0.02148),
    (0, 10, 0.5, 0.001953),
    (10, 20, 0.5, 1.0),
])
def test_exact_test_with_equal_probabilities_is_rs_binomial_test(
        k: int, n: int, p: float, expected: float) -> None:
    assert poisson_binomial_test(k, [p] * n) == pytest.approx(expected, abs=5e-5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_poisson_binomial_pmf_matches_enumeration(seed: int) -> None:
    rng = random.Random(seed)
    probabilities = [rng.random() for _ in range(8)]
    brute = [0.0] * 9
    for outcome in itertools.product((0, 1), repeat=8):
        brute[sum(outcome)] += math.prod(p if o else 1 - p for p, o in zip(probabilities,
                                                                           outcome, strict=True))
    assert poisson_binomial_pmf(probabilities) == pytest.approx(brute, abs=1e-12)


def test_poisson_binomial_pmf_with_equal_probabilities_is_binomial() -> None:
    pmf = poisson_binomial_pmf([0.3] * 40)
    expected = [math.comb(40, k) * 0.3**k * 0.7 ** (40 - k) for k in range(41)]
    assert pmf == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert float(pmf.sum()) == pytest.approx(1.0)


def test_exact_test_uses_the_unequal_probabilities() -> None:
    # Ten trials that were near-certain successes: ten successes is unremarkable, none is not.
    probabilities = [0.95] * 10
    assert poisson_binomial_test(10, probabilities) > 0.5
    assert poisson_binomial_test(0, probabilities) < 1e-10


@pytest.mark.parametrize(("observed", "probabilities"), [(-1, [0.5]), (2, [0.5]), (0, [1.5])])
def test_exact_test_refuses_bad_input(observed: int, probabilities: list[float]) -> None:
    with pytest.raises(ValueError):
        poisson_binomial_test(observed, probabilities)


@pytest.mark.parametrize(("values", "expected"), [
    ([3.0, 1.0, 2.0], [3.0, 1.0, 2.0]),
    ([1.0, 1.0, 2.0], [1.5, 1.5, 3.0]),
    ([5.0, 5.0, 5.0, 1.0], [3.0, 3.0, 3.0, 1.0]),
])
def test_ranks_average_ties(values: list[float], expected: list[float]) -> None:
    assert list(ranks(values)) == expected


@pytest.mark.parametrize("seed", [4, 5])
def test_spearman_matches_the_textbook_formula_without_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.permutation(30).astype(float), rng.permutation(30).astype(float)
    d2 = float(((x - y) ** 2).sum())
    assert spearman(list(x), list(y)) == pytest.approx(1 - 6 * d2 / (30 * (30**2 - 1)))


def test_correlation_is_undefined_for_a_constant() -> None:
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert spearman([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) is None


def test_fisher_interval() -> None:
    (low, high), p_value = fisher_interval(0.5, 28)  # z = 0.5493, se = 1/5
    assert (low, high) == pytest.approx((math.tanh(0.5493 - 0.392), math.tanh(0.5493 + 0.392)),
                                        abs=1e-3)
    assert p_value == pytest.approx(normal_p_value(0.5493 * 5), rel=1e-3)
    with pytest.raises(ValueError):
        fisher_interval(0.5, 3)


@pytest.mark.parametrize(("p_values", "expected"), [
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
    ([0.5], [0.5]),
    ([0.4, 0.6], [0.8, 0.8]),
    ([], []),
])
def test_holm(p_values: list[float], expected: list[float]) -> None:
    assert holm(p_values) == pytest.approx(expected)


def test_mean_interval_and_normal_quantiles() -> None:
    mean, se, (low, high) = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert (mean, se) == pytest.approx((2.5, math.sqrt(5 / 3) / 2))
    assert (low, high) == pytest.approx((2.5 - 1.959964 * se, 2.5 + 1.959964 * se))
    assert z_for(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert normal_p_value(1.959964) == pytest.approx(0.05, abs=1e-6)
