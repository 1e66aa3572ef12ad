"""A debate's money takes the day's budget row, the one lock every worker contends for on
PostgreSQL (storage/budget.py), last in its transaction: a submission's reservation, each step's
charge (in the journal's group commit, with other writes of the moment) and a finish's settle are
followed by nothing but money statements and the commit, so the lock is held that long only.
Measured before this order (make bench, two workers): a settle held the day 10.7 ms (p50) and
the 200 settles waited 58 s for it in all; a submission held it for its debate's rows and audit
links too."""

from __future__ import annotations

from engine.domain import DebateRequest
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.support.service_fixtures import priced, running_worker, service, wait_done
from tests.support.sql_capture import committed

MONEY = ("budget_days", "budget_ledger")


def _is_money(statement: str) -> bool:
    return any(table in statement for table in MONEY)


async def test_a_debates_money_is_moved_last_in_every_transaction(db: Database) -> None:
    svc = service(db, priced(daily_budget_usd=1000.0))
    with committed(db) as transactions:
        sub = await svc.submit(DebateRequest(topic="Adopt event sourcing for billing?",
                                             mode="consensus"), origin=Origin(surface="api"))
        async with running_worker(svc, concurrency=1):
            record = await wait_done(svc, sub.record.id)
    assert record.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
    moving = [tx.statements for tx in transactions if any(_is_money(s) for s in tx.statements)]
    kinds = {"reserve": 0, "charge": 0, "finish": 0}
    for tx in moving:
        first = next(i for i, s in enumerate(tx) if _is_money(s))
        after = tx[first:]
        assert all(_is_money(s) for s in after), (
            "a statement after the day's money in its transaction:\n  "
            + "\n  ".join(s[:110] for s in tx))
        before = " ".join(tx[:first])
        if "INSERT INTO debates" in before:
            kinds["reserve"] += 1
        elif "INSERT INTO steps" in before:
            kinds["charge"] += 1
        elif "UPDATE debates SET status" in before and "result" in before:
            kinds["finish"] += 1
    # the submission, the finish and the steps' charges were all seen, each in that order
    assert kinds["reserve"] == 1 and kinds["finish"] == 1 and kinds["charge"] >= 3, kinds
