"""Tests for engine.reading.agreement: published worked examples and independent reference
implementations on seeded random data."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pytest

from engine.reading import agreement
from engine.reading.agreement import bootstrap_alpha_interval, fleiss_kappa, interval_alpha

Matrix = list[list[float | None]]

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x
# 12 units with missing data. Published: interval alpha = 0.849 (nominal 0.743, ordinal 0.815).
KRIPPENDORFF_2011: Matrix = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories; each row is
# how many raters put the subject in categories 1..5. Published: kappa = 0.210.
FLEISS_WIKIPEDIA: list[list[int]] = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


# --------------------------------------------------------------------------- reference impls


def reference_interval_alpha(matrix: Sequence[Sequence[float | None]]) -> float | None:
    """Interval alpha straight from the coincidence-matrix definition (Krippendorff 2011).

    o_ck = sum over units of (number of ordered pairs (c, k) from different coders) / (m_u - 1);
    n_c = sum_k o_ck; alpha = 1 - (n - 1) * sum o_ck d_ck / sum_{c,k} n_c n_k d_ck, d = (c - k)^2.
    """
    n_items = len(matrix[0]) if matrix else 0
    coincidences: defaultdict[tuple[float, float], float] = defaultdict(float)
    for i in range(n_items):
        values = [float(v) for row in matrix if (v := row[i]) is not None and not math.isnan(v)]
        m = len(values)
        if m < 2:
            continue
        for a in range(m):
            for b in range(m):
                if a != b:
                    coincidences[(values[a], values[b])] += 1.0 / (m - 1)
    if not coincidences:
        return None
    marginals: defaultdict[float, float] = defaultdict(float)
    for (c, _k), weight in coincidences.items():
        marginals[c] += weight
    if len(marginals) == 1:
        return 1.0
    n = sum(marginals.values())
    observed = sum(w * (c - k) ** 2 for (c, k), w in coincidences.items())
    expected = sum(
        nc * nk * (c - k) ** 2 for c, nc in marginals.items() for k, nk in marginals.items()
    )
    return 1.0 - (n - 1.0) * observed / expected


def reference_fleiss(calls: Sequence[Sequence[str | None]]) -> float | None:
    """Brute force: P_i = share of agreeing ordered pairs of distinct raters on subject i;
    P_e = chance that two ratings drawn with replacement from the pool agree."""
    n_items = len(calls[0]) if calls else 0
    per_subject: list[float] = []
    pool: list[str] = []
    for i in range(n_items):
        ratings = [row[i] for row in calls if row[i] is not None]
        if len(ratings) < 2:
            continue
        pairs = [(a, b) for x, a in enumerate(ratings) for y, b in enumerate(ratings) if x != y]
        per_subject.append(sum(a == b for a, b in pairs) / len(pairs))
        pool.extend(r for r in ratings if r is not None)
    if not per_subject:
        return None
    p_bar = sum(per_subject) / len(per_subject)
    p_e = sum(a == b for a in pool for b in pool) / len(pool) ** 2
    if p_e == 1.0:
        return 1.0
    return (p_bar - p_e) / (1.0 - p_e)


def random_matrix(seed: int) -> Matrix:
    """3-6 judges x 5-30 items, about 20% missing; integer or two-decimal float scores."""
    rng = random.Random(seed)
    judges, items = rng.randint(3, 6), rng.randint(5, 30)
    quality = [rng.uniform(1, 10) for _ in range(items)]
    integer = seed % 2 == 0
    matrix: Matrix = []
    for _ in range(judges):
        row: list[float | None] = []
        for q in quality:
            raw = min(10.0, max(1.0, q + rng.gauss(0, 1.5)))
            score = float(round(raw)) if integer else round(raw, 2)
            row.append(None if rng.random() < 0.2 else score)
        matrix.append(row)
    return matrix


def calls_from_counts(counts: list[list[int]], categories: str) -> list[list[str | None]]:
    """Turn a subjects x categories count table into judges x subjects calls."""
    raters = sum(counts[0])
    columns = [
        [c for c, k in zip(categories, row, strict=True) for _ in range(k)] for row in counts
    ]
    return [[column[j] for column in columns] for j in range(raters)]


# --------------------------------------------------------------------------- interval alpha


def test_krippendorff_2011_interval_example() -> None:
    alpha = interval_alpha(KRIPPENDORFF_2011)
    assert alpha is not None
    assert round(alpha, 3) == 0.849
    assert alpha == pytest.approx(reference_interval_alpha(KRIPPENDORFF_2011), abs=1e-12)


def test_nan_is_missing_like_none() -> None:
    with_nan = [[math.nan if v is None else v for v in row] for row in KRIPPENDORFF_2011]
    assert interval_alpha(with_nan) == interval_alpha(KRIPPENDORFF_2011)


@pytest.mark.parametrize("seed", range(50))
def test_interval_alpha_matches_reference(seed: int) -> None:
    matrix = random_matrix(seed)
    expected = reference_interval_alpha(matrix)
    actual = interval_alpha(matrix)
    assert expected is not None and actual is not None
    assert actual == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        pytest.param([], None, id="empty"),
        pytest.param([[1.0, 2.0, 3.0]], None, id="one-rater"),
        pytest.param([[1.0, None], [None, 2.0]], None, id="no-item-rated-twice"),
        pytest.param([[3.0, 3.0], [3.0, 3.0]], 1.0, id="all-identical"),
        pytest.param([[3.0, 5.0], [3.0, None]], 1.0, id="identical-pairable-only"),
        pytest.param([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], 1.0, id="perfect"),
        pytest.param([[1.0, 2.0], [2.0, 1.0]], -0.5, id="systematic-disagreement"),
    ],
)
def test_interval_alpha_edge_cases(matrix: Matrix, expected: float | None) -> None:
    actual = interval_alpha(matrix)
    if expected is None:
        assert actual is None
    else:
        assert actual == pytest.approx(expected)
        assert actual == pytest.approx(reference_interval_alpha(matrix))


@pytest.mark.parametrize(
    "matrix",
    [
        pytest.param([[1.0, 2.0], [1.0]], id="ragged"),
        pytest.param([[1.0, math.inf], [1.0, 2.0]], id="infinite"),
    ],
)
def test_interval_alpha_rejects_malformed(matrix: Matrix) -> None:
    with pytest.raises(ValueError):
        interval_alpha(matrix)


# --------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("seed", range(20))
def test_vectorised_resample_alpha_matches_reference(seed: int) -> None:
    """The bootstrap's closed form gives the definition's alpha for any resample of items."""
    matrix = random_matrix(100 + seed)
    data = agreement._as_matrix(matrix)
    stats = agreement._column_stats(data)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, data.shape[1], size=(5, data.shape[1]))
    index[0] = np.arange(data.shape[1])  # the identity resample is the original data
    alphas = agreement._alphas_for_resamples(stats, index)
    for row, alpha in zip(index, alphas, strict=True):
        resampled = [[row_[i] for i in row] for row_ in matrix]
        expected = reference_interval_alpha(resampled)
        if expected is None:
            assert math.isnan(alpha)
        else:
            assert alpha == pytest.approx(expected, abs=1e-9)


def well_behaved_matrix() -> Matrix:
    rng = np.random.default_rng(7)
    quality = rng.uniform(2, 9, size=40)
    noise = rng.normal(0, 0.7, size=(4, 40))
    matrix: Matrix = [[round(float(v), 1) for v in row] for row in quality + noise]
    matrix[1][5] = None
    matrix[3][17] = None
    return matrix


def test_bootstrap_interval_contains_point_estimate() -> None:
    matrix = well_behaved_matrix()
    alpha = interval_alpha(matrix)
    interval = bootstrap_alpha_interval(matrix)
    assert alpha is not None and interval is not None
    low, high = interval
    assert low < alpha < high
    assert -1.0 < low < high <= 1.0


def test_bootstrap_is_deterministic_per_seed() -> None:
    matrix = well_behaved_matrix()
    first = bootstrap_alpha_interval(matrix, seed=3)
    assert first == bootstrap_alpha_interval(matrix, seed=3)
    assert first != bootstrap_alpha_interval(matrix, seed=4)


def test_bootstrap_narrower_at_lower_confidence() -> None:
    matrix = well_behaved_matrix()
    wide = bootstrap_alpha_interval(matrix, confidence=0.99)
    narrow = bootstrap_alpha_interval(matrix, confidence=0.5)
    assert wide is not None and narrow is not None
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]


def test_bootstrap_many_iterations_spanning_chunks() -> None:
    matrix = well_behaved_matrix()
    iterations = agreement._BOOTSTRAP_CHUNK + 10
    interval = bootstrap_alpha_interval(matrix, iterations=iterations, seed=1)
    assert interval is not None
    assert interval == bootstrap_alpha_interval(matrix, iterations=iterations, seed=1)


@pytest.mark.parametrize(
    "matrix",
    [
        pytest.param([[1.0], [2.0], [3.0]], id="one-item"),
        pytest.param([[1.0, 2.0, 3.0]], id="one-rater"),
        pytest.param([[1.0, None, 3.0], [None, 2.0, None]], id="nothing-pairable"),
        pytest.param([], id="empty"),
    ],
)
def test_bootstrap_none_when_undefined(matrix: Matrix) -> None:
    assert bootstrap_alpha_interval(matrix) is None


def test_bootstrap_identical_values_give_one() -> None:
    assert bootstrap_alpha_interval([[4.0, 4.0, 4.0], [4.0, 4.0, None]]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("iterations", "confidence"), [(0, 0.95), (100, 0.0), (100, 1.0), (100, 1.5)]
)
def test_bootstrap_rejects_bad_parameters(iterations: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        bootstrap_alpha_interval(
            well_behaved_matrix(), iterations=iterations, confidence=confidence
        )


# --------------------------------------------------------------------------- Fleiss' kappa


def test_fleiss_wikipedia_example() -> None:
    calls = calls_from_counts(FLEISS_WIKIPEDIA, "12345")
    assert len(calls) == 14 and len(calls[0]) == 10
    kappa = fleiss_kappa(calls)
    assert kappa is not None
    assert round(kappa, 3) == 0.210
    assert kappa == pytest.approx(reference_fleiss(calls), abs=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_fleiss_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    judges, subjects = rng.randint(2, 7), rng.randint(3, 25)
    categories = ["A", "B", "tie"][: rng.randint(2, 3)]
    truth = [rng.choice(categories) for _ in range(subjects)]
    calls: list[list[str | None]] = [
        [
            None if rng.random() < 0.25 else (t if rng.random() < 0.6 else rng.choice(categories))
            for t in truth
        ]
        for _ in range(judges)
    ]
    expected = reference_fleiss(calls)
    actual = fleiss_kappa(calls)
    if expected is None:
        assert actual is None
    else:
        assert actual == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        pytest.param([], None, id="empty"),
        pytest.param([["A", None], [None, "B"]], None, id="no-subject-rated-twice"),
        pytest.param([["A", "A"], ["A", "A"], ["A", None]], 1.0, id="one-category-only"),
        pytest.param([["A", "B"], ["A", "B"]], 1.0, id="perfect-two-categories"),
        pytest.param([["A", "B"], ["B", "A"]], -1.0, id="always-opposite"),
        pytest.param([["A", "B", "A"], ["A", "B", None]], 1.0, id="singleton-dropped"),
    ],
)
def test_fleiss_edge_cases(calls: list[list[str | None]], expected: float | None) -> None:
    actual = fleiss_kappa(calls)
    if expected is None:
        assert actual is None
    else:
        assert actual == pytest.approx(expected)


def test_fleiss_rejects_ragged() -> None:
    with pytest.raises(ValueError):
        fleiss_kappa([["A", "B"], ["A"]])
