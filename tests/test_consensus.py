"""Tests for engine.consensus: published worked examples, independent reference implementations
on seeded random data, and boundary tables for the routing policy."""

from __future__ import annotations

import ast
import dataclasses
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine import consensus
from engine.consensus import (
    ConsensusStats,
    Divergence,
    ItemSpread,
    Thresholds,
    band_for,
    bootstrap_alpha_interval,
    calibrate,
    divergence,
    fleiss_kappa,
    interval_alpha,
    route,
    summarise,
    weighted_scores,
)

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
    data = consensus._as_matrix(matrix)
    stats = consensus._column_stats(data)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, data.shape[1], size=(5, data.shape[1]))
    index[0] = np.arange(data.shape[1])  # the identity resample is the original data
    alphas = consensus._alphas_for_resamples(stats, index)
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
    iterations = consensus._BOOTSTRAP_CHUNK + 10
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


# --------------------------------------------------------------------------- calibrate

SCORES: dict[str, list[float | None]] = {
    "gpt": [6.0, 7.0, None],
    "claude": [5.0, 8.0, 4.0],
    "gemini": [8.0, 9.0, 6.0],
}


@pytest.mark.parametrize("history", [None, {}, {"gpt": [], "claude": []}])
def test_calibrate_without_history_is_identity(
    history: dict[str, list[float]] | None,
) -> None:
    result = calibrate(SCORES, history)
    assert result == SCORES
    assert all(isinstance(row, list) for row in result.values())
    assert all(result[j] is not SCORES[j] for j in SCORES)


def long_history(offset: float = 0.0, n: int = 30) -> list[float]:
    return [5.0 + offset + (i % 5) - 2.0 for i in range(n)]  # mean 5 + offset, sd sqrt(2)


def test_calibrate_pulls_lenient_judge_to_panel() -> None:
    history = {"a": long_history(), "b": long_history(), "lenient": long_history(2.0)}
    scores: dict[str, list[float | None]] = {
        "a": [4.0, 6.0, 7.0],
        "b": [4.0, 6.0, None],
        "lenient": [6.0, 8.0, 9.0],  # the same judgements, two points higher
    }
    result = calibrate(scores, history)
    for i in range(3):
        assert result["lenient"][i] == pytest.approx(result["a"][i])
    assert result["b"][2] is None
    raw_gap = 2.0
    calibrated_gap = abs(result["lenient"][0] - result["a"][0])  # type: ignore[operator]
    assert calibrated_gap < raw_gap


def test_calibrate_long_history_uses_judge_stats_exactly() -> None:
    history = {"a": long_history(), "lenient": long_history(2.0)}
    pooled = history["a"] + history["lenient"]
    panel_mean, panel_sd = float(np.mean(pooled)), float(np.std(pooled))
    judge_mean, judge_sd = 7.0, math.sqrt(2.0)
    result = calibrate({"lenient": [9.0]}, history)
    expected = panel_mean + panel_sd * (9.0 - judge_mean) / judge_sd
    assert result["lenient"][0] == pytest.approx(expected)


@pytest.mark.parametrize("n", [1, 5, 12, 19])
def test_calibrate_short_history_shrinks_toward_panel(n: int) -> None:
    history = {"a": long_history(), "b": long_history(), "lenient": long_history(2.0, n=n)}
    pooled = [v for past in history.values() for v in past]
    panel_mean, panel_sd = float(np.mean(pooled)), float(np.std(pooled))
    own_mean, own_sd = float(np.mean(history["lenient"])), float(np.std(history["lenient"]))
    w = n / (n + 20.0)
    mean = w * own_mean + (1 - w) * panel_mean
    sd = w * own_sd + (1 - w) * panel_sd
    if sd == 0.0:
        sd = panel_sd
    x = 8.0
    result = calibrate({"lenient": [x]}, history)
    assert result["lenient"][0] == pytest.approx(panel_mean + panel_sd * (x - mean) / sd)


@pytest.mark.parametrize("n", [5, 10, 15])
def test_calibrate_short_history_corrects_partly(n: int) -> None:
    history = {"a": long_history(), "b": long_history(), "lenient": long_history(2.0, n=n)}
    scores: dict[str, list[float | None]] = {"lenient": [8.0]}
    shrunk = calibrate(scores, history)["lenient"][0]
    full = calibrate(scores, history, min_history=0)["lenient"][0]  # no shrinkage
    longer = calibrate(scores, history, prior_strength=5.0)["lenient"][0]  # weaker prior
    assert shrunk is not None and full is not None and longer is not None
    # The lenient judge is pulled down, but less than with its own statistics taken at face value,
    # and the less the prior weighs, the closer the correction is to the full one.
    assert full < longer < shrunk < 8.0


def test_calibrate_judge_without_history_is_unchanged() -> None:
    history = {"a": long_history(), "b": long_history(1.0)}
    result = calibrate({"newcomer": [3.0, None, 9.5]}, history)
    assert result["newcomer"] == [pytest.approx(3.0), None, pytest.approx(9.5)]


def test_calibrate_constant_judge_uses_panel_sd() -> None:
    history = {"a": long_history(), "flat": [6.0] * 25}
    pooled = history["a"] + history["flat"]
    panel_mean, panel_sd = float(np.mean(pooled)), float(np.std(pooled))
    result = calibrate({"flat": [7.0]}, history)
    assert result["flat"][0] == pytest.approx(panel_mean + (7.0 - 6.0))
    assert panel_sd > 0


def test_calibrate_constant_panel_shifts_only() -> None:
    history = {"a": [5.0] * 25, "b": [7.0] * 0}
    result = calibrate({"a": [6.0], "b": [2.0]}, history)
    assert result == {"a": [6.0], "b": [2.0]}


# --------------------------------------------------------------------------- weighted scores


@pytest.mark.parametrize(
    ("scores", "weights", "expected"),
    [
        pytest.param({}, None, [], id="empty"),
        pytest.param({"a": [2.0, 4.0], "b": [4.0, None]}, None, [3.0, 4.0], id="equal-weights"),
        pytest.param({"a": [2.0], "b": [4.0]}, {"a": 3.0}, [2.5], id="missing-weight-is-one"),
        pytest.param({"a": [2.0], "b": [4.0]}, {"a": 1.0, "b": 0.0}, [2.0], id="zero-weight"),
        pytest.param({"a": [None, 1.0], "b": [None, 3.0]}, None, [None, 2.0], id="unrated"),
        pytest.param({"a": [5.0], "b": [1.0]}, {"a": 0.0, "b": 0.0}, [None], id="all-zero"),
    ],
)
def test_weighted_scores(
    scores: dict[str, list[float | None]],
    weights: dict[str, float] | None,
    expected: list[float | None],
) -> None:
    assert weighted_scores(scores, weights) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("scores", "weights"),
    [
        pytest.param({"a": [1.0, 2.0], "b": [1.0]}, None, id="ragged"),
        pytest.param({"a": [1.0]}, {"a": -1.0}, id="negative-weight"),
    ],
)
def test_weighted_scores_rejects_malformed(
    scores: dict[str, list[float | None]], weights: dict[str, float] | None
) -> None:
    with pytest.raises(ValueError):
        weighted_scores(scores, weights)


# --------------------------------------------------------------------------- divergence

ITEMS = ["logic", "evidence", "rebuttal", "clarity", "style"]
PANEL: dict[str, list[float | None]] = {
    "a": [7.0, 2.0, 5.0, 8.3, 6.0],
    "b": [7.5, 6.0, 7.0, 7.3, None],
    "c": [7.0, 3.0, 5.5, 8.0, None],
}


def labels(spreads: list[ItemSpread]) -> list[str]:
    return [s.item for s in spreads]


def test_divergence_lists_and_stats() -> None:
    result = divergence(ITEMS, PANEL, {"a": "A", "b": "A", "c": None})
    # clarity's spread is 8.3 - 7.3 = 1.0000000000000009 in floating point: still agreement.
    assert labels(result.agreements) == ["logic", "clarity"]
    assert labels(result.disagreements) == ["evidence", "rebuttal"]  # style: one rating only
    evidence = result.disagreements[0]
    assert evidence.ratings == {"a": 2.0, "b": 6.0, "c": 3.0}
    assert evidence.mean == pytest.approx(11.0 / 3.0)
    assert evidence.spread == pytest.approx(4.0)
    assert evidence.stdev == pytest.approx(float(np.std([2.0, 6.0, 3.0])))
    assert not result.winner_split and not result.irreconcilable


@pytest.mark.parametrize(
    ("agree_spread", "top_n", "agreements", "disagreements"),
    [
        (1.0, 3, ["logic", "clarity"], ["evidence", "rebuttal"]),
        (1.0, 1, ["logic", "clarity"], ["evidence"]),
        (1.0, 0, ["logic", "clarity"], []),
        (0.5, 3, ["logic"], ["evidence", "rebuttal", "clarity"]),
        (2.0, 3, ["logic", "clarity", "rebuttal"], ["evidence"]),
        (4.0, 3, ["logic", "clarity", "rebuttal", "evidence"], []),
    ],
)
def test_divergence_thresholds(
    agree_spread: float, top_n: int, agreements: list[str], disagreements: list[str]
) -> None:
    result = divergence(ITEMS, PANEL, {}, agree_spread=agree_spread, top_n=top_n)
    assert labels(result.agreements) == agreements
    assert labels(result.disagreements) == disagreements


def test_divergence_ties_sorted_by_label() -> None:
    scores: dict[str, list[float | None]] = {"a": [1.0, 1.0, 5.0, 5.0], "b": [3.0, 3.0, 5.0, 5.0]}
    result = divergence(["z", "y", "d", "c"], scores, {})
    assert labels(result.disagreements) == ["y", "z"]
    assert labels(result.agreements) == ["c", "d"]


@pytest.mark.parametrize(
    ("winners", "widest", "split", "irreconcilable"),
    [
        pytest.param({"a": "A", "b": "A"}, 5.0, False, False, id="same-winner"),
        pytest.param({"a": "A", "b": None}, 5.0, False, False, id="none-ignored"),
        pytest.param({"a": None, "b": None}, 5.0, False, False, id="no-winners"),
        pytest.param({"a": "A", "b": "B"}, 2.9, True, False, id="split-narrow"),
        pytest.param({"a": "A", "b": "B"}, 3.0, True, True, id="split-at-limit"),
        pytest.param({"a": "A", "b": "tie"}, 6.0, True, True, id="split-wide"),
    ],
)
def test_divergence_winner_split(
    winners: dict[str, str | None], widest: float, split: bool, irreconcilable: bool
) -> None:
    scores: dict[str, list[float | None]] = {"a": [1.0, 5.0], "b": [1.0 + widest, 5.5]}
    result = divergence(["x", "y"], scores, winners)
    assert result.winner_split is split
    assert result.irreconcilable is irreconcilable


def test_divergence_custom_irreconcilable_spread() -> None:
    scores: dict[str, list[float | None]] = {"a": [1.0], "b": [2.5]}
    winners: dict[str, str | None] = {"a": "A", "b": "B"}
    assert not divergence(["x"], scores, winners).irreconcilable
    strict = Thresholds(irreconcilable_spread=1.5)
    assert divergence(["x"], scores, winners, thresholds=strict).irreconcilable


def test_divergence_rejects_mismatched_items() -> None:
    with pytest.raises(ValueError):
        divergence(["only-one"], {"a": [1.0, 2.0]}, {})


# --------------------------------------------------------------------------- band and route


@pytest.mark.parametrize(
    ("alpha", "band"),
    [
        (1.0, "high"),
        (0.80, "high"),
        (0.7999, "tentative"),
        (0.67, "tentative"),
        (0.6699, "review"),
        (0.50, "review"),
        (0.4999, "contentious"),
        (-0.4, "contentious"),
        (None, "review"),
        (math.nan, "review"),
    ],
)
def test_band_for(alpha: float | None, band: str) -> None:
    assert band_for(alpha) == band


def test_band_for_custom_thresholds() -> None:
    strict = Thresholds(high=0.9, tentative=0.8, escalate=0.7)
    assert [band_for(a, strict) for a in (0.9, 0.85, 0.75, 0.69)] == [
        "high",
        "tentative",
        "review",
        "contentious",
    ]


@pytest.mark.parametrize(
    ("alpha", "irreconcilable", "routing"),
    [
        (0.80, False, "auto_approve"),
        (0.67, False, "tentative"),
        (0.50, False, "human_review"),
        (0.4999, False, "escalate"),
        (None, False, "human_review"),
        (0.95, True, "human_review"),
        (0.67, True, "human_review"),
        (0.50, True, "human_review"),
        (0.4999, True, "escalate"),
        (None, True, "human_review"),
    ],
)
def test_route(alpha: float | None, irreconcilable: bool, routing: str) -> None:
    assert route(alpha, irreconcilable) == routing


@pytest.mark.parametrize(
    "kwargs",
    [
        {"high": 0.6, "tentative": 0.67},
        {"tentative": 0.4, "escalate": 0.5},
        {"irreconcilable_spread": 0.0},
    ],
)
def test_thresholds_validated(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Thresholds(**kwargs)


def test_dataclasses_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Thresholds().high = 0.1  # type: ignore[misc]


# --------------------------------------------------------------------------- summarise


def test_summarise_agreeing_panel() -> None:
    rng = np.random.default_rng(11)
    quality = rng.uniform(2, 9, size=12)
    items = [f"q{i}" for i in range(12)]
    scores: dict[str, list[float | None]] = {
        judge: [round(float(q + rng.normal(0, 0.3)), 2) for q in quality]
        for judge in ("zeta", "alpha", "mu")
    }
    calls: list[list[str | None]] = [["A", "A", "B"], ["A", "A", "B"], ["A", "B", "B"]]
    winners: dict[str, str | None] = {"zeta": "A", "alpha": "A", "mu": "A"}
    stats, split, panel = summarise(items, scores, winners, calls, bootstrap_iterations=200)
    matrix = [scores[j] for j in sorted(scores)]
    assert stats.alpha == pytest.approx(interval_alpha(matrix))
    assert stats.alpha_interval == bootstrap_alpha_interval(matrix, iterations=200)
    assert stats.kappa == pytest.approx(fleiss_kappa(calls))
    assert stats.band == "high" and stats.routing == "auto_approve"
    assert not stats.irreconcilable and isinstance(split, Divergence)
    assert panel == pytest.approx(weighted_scores(scores))


def test_summarise_irreconcilable_panel_is_escalated() -> None:
    items = ["logic", "evidence", "rebuttal"]
    scores: dict[str, list[float | None]] = {
        "a": [9.0, 2.0, 8.0],
        "b": [2.0, 9.0, 3.0],
        "c": [5.0, 5.0, None],
    }
    winners: dict[str, str | None] = {"a": "A", "b": "B", "c": None}
    stats, split, panel = summarise(items, scores, winners, [["A"], ["B"], [None]])
    assert isinstance(stats, ConsensusStats)
    assert stats.alpha is not None and stats.alpha < 0.5
    assert stats.band == "contentious" and stats.routing == "escalate"
    assert stats.irreconcilable and split.irreconcilable
    assert stats.kappa == pytest.approx(-1.0)
    assert panel == pytest.approx([16 / 3, 16 / 3, 5.5])


def test_summarise_calibrates_before_measuring() -> None:
    history = {"a": long_history(), "lenient": long_history(2.0)}
    scores: dict[str, list[float | None]] = {"a": [3.0, 5.0, 7.0], "lenient": [5.0, 7.0, 9.0]}
    stats, split, _ = summarise(["x", "y", "z"], scores, {}, [], history=history)
    assert stats.alpha == pytest.approx(1.0)  # the +2 habit is not disagreement
    assert stats.kappa is None
    assert labels(split.agreements) == ["x", "y", "z"]


def test_engine_imports_no_infrastructure() -> None:
    source = Path(consensus.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "numpy" in imported  # sanity: the walk found the imports
    assert not imported & {"slack_bolt", "slack_sdk", "sqlalchemy", "aiohttp", "apscheduler"}
