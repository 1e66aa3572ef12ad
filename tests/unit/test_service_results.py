"""Reading a result the same way on every surface: alpha printed so it cannot contradict its
band, the band's rule, and calibrated scores back on the judges' 1-10 scale."""

from __future__ import annotations

import math

import pytest

from bot.service.results import (
    SCORE_MAX,
    SCORE_MIN,
    alpha_text,
    band_rule,
    on_scale,
    point_figures,
    side_means,
    thresholds_for,
)
from engine.domain import DivergencePoint
from engine.reading.verdicts import band_for
from engine.settings import EngineSettings, PresetSpec, ThresholdSpec

DEFAULT = ThresholdSpec()  # 0.80 / 0.67 / 0.50
ODD = ThresholdSpec(high=0.7545, tentative=0.6667, escalate=0.4)


@pytest.mark.parametrize(("alpha", "thresholds", "shown"), [
    (0.79978, DEFAULT, "0.799"),    # issue 11: never "0.80" for a tentative panel
    (0.8, DEFAULT, "0.80"),
    (0.80004, DEFAULT, "0.80"),     # rounding down never crosses a cut-off it is above
    (0.42, DEFAULT, "0.42"),
    (0.6651, DEFAULT, "0.665"),
    (0.4251, DEFAULT, "0.43"),      # far from every cut-off: two decimals
    (0.4999, DEFAULT, "0.499"),
    (0.7541, ODD, "0.75"),          # below the 0.7545 cut, and so is "0.75": two decimals
    (0.66666, ODD, "0.666"),
    (0.7549, ODD, "0.7549"),        # a four-decimal cut-off may take four decimals
    (0.4251, None, "0.425"),        # cut-offs unknown: never rounded up
    (0.4249, None, "0.42"),
    (0.79978, None, "0.799"),
    (-0.0004, None, "-0.001"),
    (None, DEFAULT, "n/a"),
    (math.nan, DEFAULT, "n/a"),
])
def test_alpha_text(alpha: float | None, thresholds: ThresholdSpec | None, shown: str) -> None:
    assert alpha_text(alpha, thresholds) == shown


@pytest.mark.parametrize("thresholds", [DEFAULT, ODD, ThresholdSpec(high=0.8, tentative=0.5,
                                                                    escalate=0.5)])
def test_the_printed_alpha_falls_in_the_band_of_the_real_one(thresholds: ThresholdSpec) -> None:
    for i in range(-200, 1001):
        alpha = i / 1000 - 0.00013
        shown = float(alpha_text(alpha, thresholds))
        assert band_for(shown, thresholds) == band_for(alpha, thresholds), alpha
        assert abs(shown - alpha) < 0.006


@pytest.mark.parametrize(("band", "rule"), [
    ("high", "α ≥ 0.80"), ("tentative", "0.67 ≤ α < 0.80"), ("review", "0.50 ≤ α < 0.67"),
    ("contentious", "α < 0.50"), ("unknown", ""),
])
def test_band_rule(band: str, rule: str) -> None:
    assert band_rule(band, DEFAULT) == rule


def test_band_rule_prints_uncommon_cut_offs_exactly() -> None:
    assert band_rule("tentative", ODD) == "0.6667 ≤ α < 0.7545"


def test_thresholds_for_reads_the_preset() -> None:
    strict = ThresholdSpec(high=0.9, tentative=0.7, escalate=0.6)
    settings = EngineSettings(presets={"strict": PresetSpec(name="strict", thresholds=strict)})
    assert thresholds_for(settings, "strict") == strict
    assert thresholds_for(settings, None) == thresholds_for(settings, "default") is not None
    assert thresholds_for(settings, "nope") is None


@pytest.mark.parametrize(("score", "shown"), [(12.28, 10.0), (0.98, 1.0), (7.5, 7.5)])
def test_on_scale(score: float, shown: float) -> None:
    assert (SCORE_MIN, SCORE_MAX) == (1.0, 10.0)
    assert on_scale(score) == shown


@pytest.mark.parametrize(("point", "figures"), [
    # calibration stretched the ratings: recomputed on the scale (no "spread 11.3")
    (DivergencePoint(item="i", mean=6.63, spread=11.3, ratings={"a": 12.28, "b": 0.98}),
     (5.5, 9.0, {"a": 10.0, "b": 1.0})),
    # on the scale already: the engine's own figures stand
    (DivergencePoint(item="i", mean=7.25, spread=0.5, ratings={"a": 7.0, "b": 7.5}),
     (7.25, 0.5, {"a": 7.0, "b": 7.5})),
    (DivergencePoint(item="i", mean=11.0, spread=12.0), (10.0, 9.0, {})),
])
def test_point_figures(point: DivergencePoint,
                       figures: tuple[float, float, dict[str, float]]) -> None:
    got = point_figures(point)
    assert (got.mean, got.spread) == pytest.approx(figures[:2])
    assert got.ratings == figures[2]


def test_side_means_stay_on_the_scale() -> None:
    assert side_means({"pro.a": 11.4, "pro.b": 9.0, "con.a": -0.5, "con.b": None,
                       "claim.p1": 3.0}) == {"pro": 9.5, "con": 1.0}
    assert side_means({}) == {"pro": None, "con": None}
