"""Judges' scores as every surface shows them, computed once where the result is built.

A divergence point carries two sets of figures, each named:

* ``ratings``, ``mean``, ``spread``: the scores as the judges gave them, on the rubric's 1–10
  scale; these are what a surface shows as ratings;
* ``calibrated``, ``calibrated_mean``, ``calibrated_spread``: the same scores calibrated for each
  judge's habitual leniency (engine/verdicts.py ``calibrate``), which is what alpha and the
  choice of the widest splits are computed over, put back inside the 1–10 scale (calibration can
  stretch a score past it: 13.28 is shown as 10). The unclamped calibrated rows stay in
  ``ConsensusSummary.calibrated`` for the statistics.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.domain import DivergencePoint
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


def divergence_point(item: str, label: str, raw: Mapping[str, float],
                     calibrated: Mapping[str, float]) -> DivergencePoint:
    """One item's figures: the judges' own ratings, and the calibrated ones inside the scale.
    `raw` may lack a judge `calibrated` has (it never does in a panel; both come from one row)."""
    shown = {j: round(on_scale(v), 3) for j, v in calibrated.items()}
    given = {j: float(v) for j, v in raw.items()} or shown
    mean, spread = _mean_spread(list(given.values()))
    c_mean, c_spread = _mean_spread(list(shown.values()))
    return DivergencePoint(item=item, label=label, mean=mean, spread=spread, ratings=given,
                           calibrated=shown, calibrated_mean=c_mean,
                           calibrated_spread=c_spread)


def side_means(weighted: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mean of each side's weighted scores ("pro.*", "con.*") on the 1-10 scale; None when
    a side has none (what a result stored before `ConsensusSummary.means` shows)."""
    means: dict[str, float | None] = {}
    for side in ("pro", "con"):
        values = [on_scale(v) for k, v in weighted.items()
                  if k.startswith(f"{side}.") and v is not None]
        means[side] = sum(values) / len(values) if values else None
    return means


__all__ = ["SCALE", "SCORE_MAX", "SCORE_MIN", "divergence_point", "on_scale", "side_means"]
