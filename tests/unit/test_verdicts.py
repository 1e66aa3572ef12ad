"""Tests for engine.reading.verdicts: calibration, weighted scores, divergence, boundary tables
for the routing policy, and `summarise` against engine.reading.agreement."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from engine.reading import agreement, verdicts
from engine.reading.agreement import bootstrap_alpha_interval, fleiss_kappa, interval_alpha
from engine.reading.verdicts import (
    ConsensusStats,
    Divergence,
    ItemSpread,
    band_for,
    calibrate,
    divergence,
    route,
    summarise,
    weighted_scores,
)
from engine.settings import ThresholdSpec
from engine.vocabulary import Band, Routing

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
    strict = ThresholdSpec(irreconcilable_spread=1.5)
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
    assert band_for(alpha) == band and isinstance(band_for(alpha), Band)


def test_band_for_custom_thresholds() -> None:
    strict = ThresholdSpec(high=0.9, tentative=0.8, escalate=0.7)
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
    assert isinstance(route(alpha, irreconcilable), Routing)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"high": 0.6, "tentative": 0.67},
        {"tentative": 0.4, "escalate": 0.5},
        {"irreconcilable_spread": 0.0},
        {"irreconcilable_spread": float("inf")},
        {"high": float("inf")},
        {"high": float("nan")},
        {"high": 1.01},
        {"escalate": -0.01},
        {"escalate": float("-inf"), "tentative": 0.0},
    ],
)
def test_thresholds_validated(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ThresholdSpec(**kwargs)


def test_thresholds_are_frozen() -> None:
    with pytest.raises(ValidationError):
        ThresholdSpec().high = 0.1  # type: ignore[misc]


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


@pytest.mark.parametrize("module", [agreement, verdicts])
def test_engine_imports_no_infrastructure(module: object) -> None:
    source = Path(str(getattr(module, "__file__", ""))).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "numpy" in imported  # sanity: the walk found the imports
    assert not imported & {"slack_bolt", "slack_sdk", "sqlalchemy", "aiohttp", "apscheduler"}
