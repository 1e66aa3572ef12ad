"""Judges' scores as every surface shows them, computed once where the result is built.

A divergence point carries two sets of figures, each named:

* ``ratings``, ``mean``, ``spread``: the scores as the judges gave them, on the rubric's 1–10
  scale; these are what a surface shows as ratings;
* ``calibrated``, ``calibrated_mean``, ``calibrated_spread``: the same scores calibrated for each
  judge's habitual leniency (engine/reading/verdicts.py ``calibrate``), which is what alpha and the
  choice of the widest splits are computed over, put back inside the 1–10 scale (calibration can
  stretch a score past it: 13.28 is shown as 10). The unclamped calibrated rows stay in
  ``ConsensusSummary.calibrated`` for the statistics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.schemas.procon import RubricScores


def _scale() -> tuple[float, float]:
    """The rubric's range (1-10), read from the schema the judges fill in."""
    meta = RubricScores.model_fields["logic"].metadata
    low = next(float(m.ge) for m in meta if getattr(m, "ge", None) is not None)
    high = next(float(m.le) for m in meta if getattr(m, "le", None) is not None)
    return low, high


SCORE_MIN, SCORE_MAX = _scale()
SCALE = f"{SCORE_MIN:g}–{SCORE_MAX:g}"


def on_scale(score: float) -> float:
    """A calibrated score put back on the judges' 1-10 scale (calibration can stretch past it)."""
    return min(SCORE_MAX, max(SCORE_MIN, score))


def _mean_spread(values: list[float]) -> tuple[float, float]:
    return round(sum(values) / len(values), 3), round(max(values) - min(values), 3)


def point_fields(item: str, label: str, raw: Mapping[str, float],
                 calibrated: Mapping[str, float]) -> dict[str, Any]:
    """One item's figures (`engine.domain.DivergencePoint`'s fields): the judges' own ratings,
    and the calibrated ones inside the scale. Without `raw`, the calibrated ones stand in."""
    shown = {j: round(on_scale(v), 3) for j, v in calibrated.items()}
    given = {j: float(v) for j, v in raw.items()} or shown
    mean, spread = _mean_spread(list(given.values()))
    c_mean, c_spread = _mean_spread(list(shown.values()))
    return {"item": item, "label": label, "mean": mean, "spread": spread, "ratings": given,
            "calibrated": shown, "calibrated_mean": c_mean, "calibrated_spread": c_spread}


def _as_scored(point: Any, index: Mapping[str, int],
               rows: Mapping[str, list[float | None]]) -> Any:
    """A stored point of the calibrated figures only, rebuilt from the panel's raw rows; as it
    was when it cannot be (not a stored dict, already split, or a judge's rating missing)."""
    if (not isinstance(point, dict) or point.get("calibrated_mean") is not None
            or point.get("item") not in index or not point.get("ratings")):
        return point
    at = index[point["item"]]
    raw: dict[str, float] = {}
    for judge in point["ratings"]:
        row = rows.get(judge) or []
        if at < len(row) and (value := row[at]) is not None:
            raw[judge] = float(value)
    if len(raw) != len(point["ratings"]):
        return point
    return point_fields(point["item"], point.get("label", ""), raw, point["ratings"])


def points_as_scored(data: dict[str, Any]) -> dict[str, Any]:
    """A stored result (its JSON) whose divergence points hold calibrated figures only (stored
    before the two were kept apart) with every point rebuilt (`point_fields`) from the judges'
    raw rows in its consensus, so the API and every surface read them the same way."""
    consensus = data.get("consensus")
    if not isinstance(consensus, dict) or not consensus.get("ratings"):
        return data
    index = {item: i for i, item in enumerate(consensus.get("items") or [])}
    rows = consensus["ratings"]
    out = dict(data)
    for key, lists in (("divergence", ("agreements", "disagreements")),
                       ("discussion", ("points",)), ("brief", ("points", "agreements"))):
        part = data.get(key)
        if isinstance(part, dict):
            out[key] = {**part, **{name: [_as_scored(p, index, rows) for p in part[name]]
                                   for name in lists if isinstance(part.get(name), list)}}
    return out


def side_means(weighted: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mean of each side's weighted scores ("pro.*", "con.*") on the 1-10 scale; None when
    a side has none (what a result stored before `ConsensusSummary.means` shows)."""
    means: dict[str, float | None] = {}
    for side in ("pro", "con"):
        values = [on_scale(v) for k, v in weighted.items()
                  if k.startswith(f"{side}.") and v is not None]
        means[side] = sum(values) / len(values) if values else None
    return means


__all__ = ["SCALE", "SCORE_MAX", "SCORE_MIN", "on_scale", "point_fields", "points_as_scored",
           "side_means"]
