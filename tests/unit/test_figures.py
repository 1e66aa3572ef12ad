"""Divergence points carry the judges' own ratings and, named, the calibrated ones inside the
scale (engine/reading/figures.py); a result stored when points held calibrated figures only is read
with both, rebuilt from its panel's raw rows, so the API shows no rating outside 1–10."""

from __future__ import annotations

from typing import Any

import pytest

from bot.service.results import point_figures
from engine.domain import DebateResult, DivergencePoint
from engine.reading.figures import point_fields

#: what main stored for one decision debate (issue 33): calibrated figures, unnamed, past 1-10
OLD_POINT = {"item": "con.clarity", "label": "AGAINST · clarity", "mean": 7.431,
             "spread": 14.02, "ratings": {"a": 13.28, "b": -0.74, "c": 8.754}}


def stored(point: dict[str, Any], **consensus: Any) -> dict[str, Any]:
    return {"id": "d", "status": "completed", "mode": "consensus", "topic": "t",
            "consensus": {"judges": ["a", "b", "c"], "items": ["pro.clarity", "con.clarity"],
                          "ratings": {"a": [9.0, 10.0], "b": [2.0, 1.0], "c": [7.0, 8.0]},
                          **consensus},
            "divergence": {"disagreements": [point], "agreements": []},
            "discussion": {"needed": True, "reason": "alpha 0.10 < 0.50", "cutoff": 0.5,
                           "points": [point]}}


def test_a_point_has_both_figures_each_on_the_scale() -> None:
    fields = point_fields("i", "label", {"a": 10.0, "b": 1.0}, {"a": 13.28, "b": -0.74})
    assert fields == {"item": "i", "label": "label", "mean": 5.5, "spread": 9.0,
                      "ratings": {"a": 10.0, "b": 1.0}, "calibrated": {"a": 10.0, "b": 1.0},
                      "calibrated_mean": 5.5, "calibrated_spread": 9.0}


def test_a_result_stored_with_calibrated_points_is_read_with_the_judges_ratings() -> None:
    result = DebateResult.model_validate(stored(OLD_POINT))
    for point in (result.divergence.disagreements[0], result.discussion.points[0]):  # type: ignore[union-attr]
        assert point.ratings == {"a": 10.0, "b": 1.0, "c": 8.0}
        assert (point.mean, point.spread) == (pytest.approx(6.333), 9.0)
        assert point.calibrated == {"a": 10.0, "b": 1.0, "c": 8.754}
        assert point.calibrated_mean == pytest.approx(6.585) and point.calibrated_spread == 9.0
        assert point_figures(point).text == ("mean 6.3, spread 9.0; calibrated mean 6.6, "
                                             "spread 9.0")
    shown = result.model_dump(mode="json")   # what the API answers
    ratings = [v for p in shown["divergence"]["disagreements"]
               for v in (*p["ratings"].values(), *p["calibrated"].values())]
    assert ratings and all(1.0 <= v <= 10.0 for v in ratings)


def test_a_point_no_history_calibrated_prints_one_set_of_figures() -> None:
    point = DivergencePoint(**point_fields("i", "l", {"a": 7.0, "b": 8.0}, {"a": 7.0, "b": 8.0}))
    assert point_figures(point).text == "mean 7.5, spread 1.0"
    assert point_figures(point).spread_text == "spread 1.0"


@pytest.mark.parametrize("consensus", [
    {"ratings": {}},                                         # no raw rows kept
    {"ratings": {"a": [9.0, 10.0], "b": [2.0, None], "c": [7.0, 8.0]}},   # one missing
])
def test_a_point_that_cannot_be_rebuilt_is_named_calibrated(consensus: dict[str, Any]) -> None:
    result = DebateResult.model_validate(stored(OLD_POINT, **consensus))
    point = result.divergence.disagreements[0]
    assert point.calibrated_mean is None and point.ratings == OLD_POINT["ratings"]
    assert point_figures(point).text == "calibrated mean 6.6, spread 9.0"


def test_a_point_built_as_a_model_is_left_as_it_is() -> None:
    point = DivergencePoint(**OLD_POINT)
    assert DebateResult(id="d", status="completed", mode="consensus", topic="t",
                        divergence={"disagreements": [point]}
                        ).divergence.disagreements[0] == point
