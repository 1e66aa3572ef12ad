"""Service metrics over a handful of synthetic debates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.domain import ConsensusSummary, DebateResult
from storage import debates, metrics
from storage.db import Database
from storage.records import DebateStatus
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import make_record

db = fx.db  # fixture (until conftest.py imports it)
RUN_ENDS = {DebateStatus.COMPLETED, DebateStatus.FAILED, DebateStatus.TIMED_OUT}
DAY = datetime(2024, 11, 22, 9, 0, tzinfo=UTC)


async def _finished(
    db: Database, status: DebateStatus, *, seconds: float, cost: float, who: str = "U1",
    consensus: ConsensusSummary | None = None, created: datetime = DAY,
) -> None:
    record = make_record(requested_by=who, created_at=created, status=DebateStatus.QUEUED)
    ran = status if status in RUN_ENDS else DebateStatus.COMPLETED  # routed after completing
    result = DebateResult(id=record.id, status=ran.value, mode="consensus", topic="t",
                          consensus=consensus)
    async with db.transaction() as session:
        await debates.create(session, record=record, topic_key="k")
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w",
                                 started_at=created)
        await debates.transition(session, record.id, status, actor="w", result=result,
                                 cost_usd=cost, finished_at=created + timedelta(seconds=seconds))


def _panel(alpha: float | None, ratings: dict[str, list[float | None]],
           irreconcilable: bool = False) -> ConsensusSummary:
    return ConsensusSummary(alpha=alpha, ratings=ratings, irreconcilable=irreconcilable,
                            judges=list(ratings))


async def test_service_metrics(db: Database) -> None:
    await _finished(db, DebateStatus.COMPLETED, seconds=10, cost=0.10,
                    consensus=_panel(0.9, {"tech": [8, 7], "risk": [6, 7]}))
    await _finished(db, DebateStatus.AWAITING_REVIEW, seconds=20, cost=0.20, who="U2",
                    consensus=_panel(0.3, {"tech": [9, None], "risk": [3, 5]}, True))
    await _finished(db, DebateStatus.FAILED, seconds=30, cost=0.05,
                    consensus=_panel(0.7, {"tech": [5]}))
    await _finished(db, DebateStatus.TIMED_OUT, seconds=40, cost=0.30)
    await _finished(db, DebateStatus.COMPLETED, seconds=50, cost=1.0,
                    created=DAY - timedelta(days=1))
    async with db.transaction(readonly=True) as session:
        m: dict[str, Any] = await metrics.service_metrics(session, day=DAY.date())
    assert m["finished"] == 5
    assert (m["success_rate"], m["failure_rate"], m["timeout_rate"]) == (0.6, 0.2, 0.2)
    assert m["duration_seconds"] == {"count": 5, "p50": 30.0, "p95": pytest.approx(48.0),
                                     "p99": pytest.approx(49.6)}
    assert m["cost_per_debate_usd"] == pytest.approx(0.33)
    assert m["debates_today"] == 4 and m["cost_today_usd"] == pytest.approx(0.65)
    assert m["cost_per_requester_today"] == {
        "U1": {"debates": 3, "cost_usd": pytest.approx(0.45)},
        "U2": {"debates": 1, "cost_usd": pytest.approx(0.20)},
    }
    assert m["with_consensus"] == 3
    assert m["alpha_histogram"] == {"<0.50": 1, "0.67-0.80": 1, ">=0.80": 1}
    assert m["irreconcilable_rate"] == pytest.approx(1 / 3)
    tech, risk = m["judges"]["tech"], m["judges"]["risk"]
    assert tech["n"] == 4 and tech["mean"] == pytest.approx(7.25)
    assert risk["n"] == 4 and risk["mean"] == pytest.approx(5.25)
    assert tech["spread"] == pytest.approx(1.479, abs=1e-3)
    assert tech["bias"] > 0 > risk["bias"]


async def test_metrics_of_an_empty_database(db: Database) -> None:
    async with db.transaction(readonly=True) as session:
        m = await metrics.service_metrics(session, day=DAY.date())
    assert m["finished"] == 0 and m["success_rate"] == 0.0
    assert m["duration_seconds"]["p50"] is None and m["judges"] == {}


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([], 50, None), ([3.0], 99, 3.0), ([1.0, 2.0, 3.0, 4.0], 50, 2.5), ([0.0, 10.0], 95, 9.5),
    ([4.0, 1.0, 3.0, 2.0], 50, 2.5),
])
def test_percentiles(values: list[float], q: int, expected: float | None) -> None:
    assert metrics.percentiles(values, q) == [expected]
