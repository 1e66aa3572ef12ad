"""How far a judge panel agrees, with pure functions only (no I/O, no clocks, no global state):

* ``interval_alpha`` — Krippendorff's alpha (interval metric) over the judges x items score matrix;
  the chance-corrected reliability of the scores, tolerant of missing ratings.
* ``bootstrap_alpha_interval`` — a percentile bootstrap interval for that alpha, resampling items.
  It uses a vectorised closed form of interval alpha (identical to the coincidence-matrix
  definition) so 1000 resamples cost about a millisecond instead of a second.
* ``fleiss_kappa`` — agreement on the categorical calls ("A", "B", "tie"), generalised to an
  unequal number of raters per subject.

What the service does with the answer (calibration, the band, the routing) is
engine/reading/verdicts.py.

Conventions: ``None`` (or NaN) marks a missing rating everywhere; a statistic that is undefined
for the data given is returned as ``None`` rather than raising, so callers can route "cannot
tell" to a human. Malformed input (ragged rows, mismatched lengths, bad parameters) raises
``ValueError``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
import numpy.typing as npt

__all__ = ["bootstrap_alpha_interval", "fleiss_kappa", "interval_alpha"]

FloatArray = npt.NDArray[np.float64]

#: Bootstrap resamples are drawn in blocks of this many rows to bound memory.
_BOOTSTRAP_CHUNK = 4096


# --------------------------------------------------------------------------- alpha


def _as_matrix(matrix: Sequence[Sequence[float | None]]) -> FloatArray:
    """Rows = raters, columns = items, missing -> NaN. Raises on ragged rows or infinities."""
    rows = [[math.nan if v is None else float(v) for v in row] for row in matrix]
    width = len(rows[0]) if rows else 0
    if any(len(row) != width for row in rows):
        raise ValueError("every rater must have a value (or None) for every item")
    data = np.array(rows, dtype=np.float64).reshape(len(rows), width)
    if np.isinf(data).any():
        raise ValueError("scores must be finite (use None for a missing rating)")
    return data


def _pairable(data: FloatArray) -> FloatArray:
    """The columns (items) that hold at least two ratings; only they carry information."""
    counts = (~np.isnan(data)).sum(axis=0)
    return data[:, counts >= 2]


def interval_alpha(matrix: Sequence[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the interval metric (squared differences).

    ``matrix[j][i]`` is judge j's score for item i; ``None`` or NaN is a missing rating.
    Returns ``None`` when alpha is undefined: no item was rated by two or more judges.
    When every pairable value is identical, observed and expected disagreement are both zero
    (0/0); we define that as perfect agreement and return ``1.0``.
    """
    data = _pairable(_as_matrix(matrix))
    values = data[~np.isnan(data)]
    if values.size < 2:
        return None
    if np.all(values == values[0]):
        return 1.0
    # Only pairable items are passed: single ratings add nothing to the coincidence matrix,
    # and leaving them out keeps krippendorff's value domain (and its cost) small.
    result = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    return float(result)


@dataclass(frozen=True, slots=True)
class _ColumnStats:
    """Per-item sufficient statistics of interval alpha, centred on the pooled mean.

    For item u with m_u >= 2 ratings: ``size`` = m_u, ``total`` = sum of centred values,
    ``squares`` = sum of squared centred values, ``within`` = m_u * SSD_u / (m_u - 1) where SSD_u
    is the sum of squared deviations from the item's own mean, and ``low``/``high`` its range.
    Items with fewer than two ratings get zeros (and an empty range), so they contribute nothing.
    With n = sum(size), alpha = 1 - (n - 1) * sum(within) / (n * sum(squares) - sum(total)^2),
    which is the coincidence-matrix definition with d(c, k) = (c - k)^2 summed in closed form.
    """

    size: FloatArray
    total: FloatArray
    squares: FloatArray
    within: FloatArray
    low: FloatArray
    high: FloatArray


def _column_stats(data: FloatArray) -> _ColumnStats:
    present = ~np.isnan(data)
    size = present.sum(axis=0).astype(np.float64)
    pairable = size >= 2
    size = np.where(pairable, size, 0.0)
    mask = present & pairable[np.newaxis, :]
    centre = float(data[mask].mean()) if mask.any() else 0.0
    values = np.where(mask, data - centre, 0.0)
    total = values.sum(axis=0)
    safe_size = np.where(pairable, size, 1.0)
    item_mean = total / safe_size
    ssd = np.where(mask, (values - item_mean) ** 2, 0.0).sum(axis=0)
    squares = ssd + size * item_mean**2
    within = np.where(pairable, size * ssd / np.maximum(safe_size - 1.0, 1.0), 0.0)
    low = np.where(mask, data, np.inf).min(axis=0)
    high = np.where(mask, data, -np.inf).max(axis=0)
    return _ColumnStats(size, total, squares, within, low, high)


def _alphas_for_resamples(stats: _ColumnStats, index: npt.NDArray[np.intp]) -> FloatArray:
    """Interval alpha of each resample; row r of ``index`` lists the items of resample r.

    Resamples with no pairable item are NaN (undefined); those whose pairable values are all
    identical are 1.0, matching ``interval_alpha``.
    """
    n = stats.size[index].sum(axis=1)
    total = stats.total[index].sum(axis=1)
    squares = stats.squares[index].sum(axis=1)
    within = stats.within[index].sum(axis=1)
    identical = stats.high[index].max(axis=1) == stats.low[index].min(axis=1)
    expected = n * squares - total**2
    valid = (n >= 2) & (expected > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        alphas = 1.0 - (n - 1.0) * within / expected
    alphas = np.where(valid, alphas, np.nan)
    return np.where((n >= 2) & identical, 1.0, alphas)


def bootstrap_alpha_interval(
    matrix: Sequence[Sequence[float | None]],
    *,
    iterations: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval for ``interval_alpha``, resampling items with replacement.

    Deterministic for a given ``seed``. Resamples in which alpha is undefined are skipped; the
    result is ``None`` when the matrix has fewer than two items or fewer than half of the
    resamples were usable (the interval would then describe a biased subset of resamples).
    """
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    data = _as_matrix(matrix)
    n_items = data.shape[1]
    if data.shape[0] < 2 or n_items < 2:
        return None
    stats = _column_stats(data)
    rng = np.random.default_rng(seed)
    blocks: list[FloatArray] = []
    for start in range(0, iterations, _BOOTSTRAP_CHUNK):
        rows = min(_BOOTSTRAP_CHUNK, iterations - start)
        index = rng.integers(0, n_items, size=(rows, n_items), dtype=np.intp)
        blocks.append(_alphas_for_resamples(stats, index))
    alphas = np.concatenate(blocks)
    alphas = alphas[~np.isnan(alphas)]
    if alphas.size < max(2, math.ceil(iterations / 2)):
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(alphas, [tail, 1.0 - tail])
    return float(low), float(high)


# --------------------------------------------------------------------------- kappa


def fleiss_kappa(calls: Sequence[Sequence[str | None]]) -> float | None:
    """Fleiss' kappa for categorical calls, with any number of raters per subject.

    ``calls[j][i]`` is judge j's category for subject i (``None`` = missing). Subjects with fewer
    than two ratings are dropped. P_i = sum_k n_ik(n_ik - 1) / (n_i(n_i - 1)), P_bar is their
    mean, p_k pools every retained rating and P_e = sum_k p_k^2. If only one category was ever
    used, P_e = 1 and necessarily P_bar = 1: we return 1.0 (perfect agreement) instead of 0/0.
    Returns ``None`` when no subject has two or more ratings.
    """
    width = len(calls[0]) if calls else 0
    if any(len(row) != width for row in calls):
        raise ValueError("every judge must have a call (or None) for every subject")
    subjects: list[Counter[str]] = []
    for i in range(width):
        counts = Counter(call for row in calls if (call := row[i]) is not None)
        if counts.total() >= 2:
            subjects.append(counts)
    if not subjects:
        return None
    pooled: Counter[str] = Counter()
    agreement = 0.0
    for counts in subjects:
        n_i = counts.total()
        agreement += sum(c * (c - 1) for c in counts.values()) / (n_i * (n_i - 1))
        pooled.update(counts)
    if len(pooled) == 1:
        return 1.0
    p_bar = agreement / len(subjects)
    n_total = pooled.total()
    p_e = sum((c / n_total) ** 2 for c in pooled.values())
    return (p_bar - p_e) / (1.0 - p_e)


def warm() -> None:
    """numpy loads parts of itself on first use (a tenth of a second of CPU): compute the
    statistics once on a tiny panel, so a debate's judging phase costs the same whether or not it
    is the process's first. Once per process; run it while a debate waits on the provider."""
    if _WARMED:
        return
    interval_alpha([[1.0, 2.0, 3.0], [1.0, 3.0, 3.0]])
    bootstrap_alpha_interval([[1.0, 2.0, 3.0], [1.0, 3.0, 3.0]], iterations=10)
    fleiss_kappa([["pro", "con"], ["pro", "pro"]])
    _WARMED.append(True)


def warmed() -> bool:
    return bool(_WARMED)


_WARMED: list[bool] = []
