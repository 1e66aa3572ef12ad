"""Service metrics for the console and /metrics: outcomes, durations, money and judge agreement.

Rates, percentiles and judge statistics come from the last `sample` finished debates, computed
in Python so SQLite and PostgreSQL give the same figures; money for `day` comes from that day's
debates (the day their budget was reserved on).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.settings import ThresholdSpec
from storage.models import DebateRow
from storage.records import DebateStatus

SUCCESS_STATUSES = frozenset({
    DebateStatus.COMPLETED.value, DebateStatus.AWAITING_REVIEW.value,
    DebateStatus.APPROVED.value, DebateStatus.ESCALATED.value,
})
_THRESHOLDS = ThresholdSpec()


def percentiles(values: Sequence[float], *at: int) -> list[float | None]:
    """The percentiles `at` (1..99) of `values`, linearly interpolated between the samples
    (`statistics.quantiles`, inclusive method); None each when there are no values."""
    if not values:
        return [None] * len(at)
    if len(values) == 1:
        return [float(values[0])] * len(at)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [cuts[q - 1] for q in at]


def _rate(count: int, total: int) -> float:
    return count / total if total else 0.0


def _outcomes(rows: Sequence[Row[Any]]) -> dict[str, Any]:
    total = len(rows)
    statuses = [row.status for row in rows]
    return {
        "finished": total,
        "success_rate": _rate(sum(s in SUCCESS_STATUSES for s in statuses), total),
        "failure_rate": _rate(statuses.count(DebateStatus.FAILED.value), total),
        "timeout_rate": _rate(statuses.count(DebateStatus.TIMED_OUT.value), total),
    }


def _durations(rows: Sequence[Row[Any]]) -> dict[str, float | int | None]:
    seconds = [(row.finished_at - row.started_at).total_seconds()
               for row in rows if row.started_at is not None and row.finished_at is not None]
    p50, p95, p99 = percentiles(seconds, 50, 95, 99)
    return {"count": len(seconds), "p50": p50, "p95": p95, "p99": p99}


def _alpha_bucket(alpha: float | None) -> str:
    if alpha is None:
        return "none"
    if alpha >= _THRESHOLDS.high:
        return f">={_THRESHOLDS.high:.2f}"
    if alpha >= _THRESHOLDS.tentative:
        return f"{_THRESHOLDS.tentative:.2f}-{_THRESHOLDS.high:.2f}"
    if alpha >= _THRESHOLDS.escalate:
        return f"{_THRESHOLDS.escalate:.2f}-{_THRESHOLDS.tentative:.2f}"
    return f"<{_THRESHOLDS.escalate:.2f}"




def _judge_stats(panels: Iterable[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Per judge: n ratings, mean, spread (population sd), and bias (mean distance from the
    panel's mean on the same item)."""
    ratings: dict[str, list[float]] = defaultdict(list)
    offsets: dict[str, list[float]] = defaultdict(list)
    for panel in panels:
        rows = {j: r for j, r in (panel.get("ratings") or {}).items() if isinstance(r, list)}
        for item in range(max((len(r) for r in rows.values()), default=0)):
            scores = {j: float(r[item]) for j, r in rows.items()
                      if item < len(r) and isinstance(r[item], int | float)}
            if not scores:
                continue
            panel_mean = statistics.fmean(scores.values())
            for judge, score in scores.items():
                ratings[judge].append(score)
                offsets[judge].append(score - panel_mean)
    return {
        judge: {"n": len(values), "mean": statistics.fmean(values),
                "spread": statistics.pstdev(values), "bias": statistics.fmean(offsets[judge])}
        for judge, values in sorted(ratings.items())
    }


def _agreement(rows: Sequence[Row[Any]]) -> dict[str, Any]:
    panels = [row.consensus for row in rows if isinstance(row.consensus, dict)]
    histogram: dict[str, int] = defaultdict(int)
    for panel in panels:
        alpha = panel.get("alpha")
        histogram[_alpha_bucket(float(alpha) if isinstance(alpha, int | float) else None)] += 1
    irreconcilable = sum(bool(panel.get("irreconcilable")) for panel in panels)
    return {
        "with_consensus": len(panels),
        "alpha_histogram": dict(sorted(histogram.items())),
        "irreconcilable_rate": _rate(irreconcilable, len(panels)),
        "judges": _judge_stats(panels),
    }


async def _money_on(session: AsyncSession, day: date) -> dict[str, Any]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    rows = (await session.execute(
        select(DebateRow.requested_by, func.count(), func.sum(DebateRow.cost_usd))
        .where(DebateRow.created_at >= start, DebateRow.created_at < start + timedelta(days=1))
        .group_by(DebateRow.requested_by)
    )).all()
    per_requester = {who or "unknown": {"debates": int(n), "cost_usd": float(cost or 0.0)}
                     for who, n, cost in rows}
    return {
        "debates_today": sum(entry["debates"] for entry in per_requester.values()),
        "cost_today_usd": sum(entry["cost_usd"] for entry in per_requester.values()),
        "cost_per_requester_today": per_requester,
    }


async def service_metrics(
    session: AsyncSession, *, day: date, sample: int = 1000
) -> dict[str, Any]:
    """Everything the console shows, as plain JSON-able data."""
    # only each result's consensus, extracted by the database: the whole results (10-20 KB
    # each) decoded for a thousand debates were most of the page's time
    rows = (await session.execute(
        select(DebateRow.status, DebateRow.started_at, DebateRow.finished_at,
               DebateRow.cost_usd, DebateRow.result["consensus"].label("consensus"))
        .where(DebateRow.finished_at.is_not(None))
        .order_by(DebateRow.finished_at.desc()).limit(sample)
    )).all()
    costs = [row.cost_usd for row in rows]
    return {
        "day": day.isoformat(),
        **_outcomes(rows),
        "duration_seconds": _durations(rows),
        "cost_per_debate_usd": statistics.fmean(costs) if costs else 0.0,
        **await _money_on(session, day),
        **_agreement(rows),
    }
