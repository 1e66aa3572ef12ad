"""The claiming worker's readmission (bot/service/readmission.py): a debate that holds its high
estimate since submission is admitted from a read shared with the other debates starting, with
no transaction of its own; one that needs more is still topped up, or refused, in one."""

from __future__ import annotations

from typing import Any

import pytest

from engine.domain import Estimate, utcnow
from engine.vocabulary import Mode
from storage import budget
from storage.db import Database
from storage.journal import journal_for, lookups_for
from tests.support.sql_capture import committed
from tests.support.storage_fixtures import add_debate, db

__all__ = ["db"]  # fixture

CAP = 10.0


def _estimate(usd: float, high: float) -> Estimate:
    return Estimate(mode=Mode.SIMPLE, calls=3, depth=2, prompt_tokens=1000,
                    completion_tokens=300, usd=usd, calls_per_role={"pro": 1}, usd_high=high,
                    ceiling_usd=high * 4)


async def _holding(db: Database, usd: float) -> str:
    record = await add_debate(db)
    async with db.transaction() as session:
        await budget.reserve(session, day=utcnow().date(), cap_usd=CAP, amount_usd=usd,
                             debate_id=record.id)
    return record.id


async def _readmit(db: Database, debate_id: str, estimate: Estimate,
                   cap_usd: float = CAP) -> str | None:
    from bot.service.readmission import readmit

    found = await readmit(db, debate_id=debate_id, estimate=estimate, reserved_usd=0.5,
                          max_debate_usd=None, day=utcnow().date(), cap_usd=cap_usd)
    return found.refused


async def _held(db: Database, debate_id: str) -> float:
    async with db.transaction(readonly=True) as session:
        return await budget.held(session, debate_id)


async def test_a_debate_holding_its_high_estimate_opens_no_transaction(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    debate_id = await _holding(db, 0.5)
    opened: list[bool] = []
    transaction = db.transaction

    def spied(*, readonly: bool = False, **kwargs: Any) -> Any:
        opened.append(readonly)
        return transaction(readonly=readonly, **kwargs)

    monkeypatch.setattr(db, "transaction", spied)
    reads = lookups_for(db).transactions
    with committed(db) as transactions:
        refused = await _readmit(db, debate_id, _estimate(0.3, 0.5))
    monkeypatch.undo()
    assert refused is None
    assert lookups_for(db).transactions == reads + 1   # its hold, read with the others'
    assert opened == [True]   # the lookup's, read-only: no write transaction, no lock
    assert [s.split()[0] for tx in transactions for s in tx.statements] == ["SELECT"]
    assert await _held(db, debate_id) == 0.5


async def test_a_debate_priced_higher_here_is_topped_up_in_a_transaction(db: Database) -> None:
    debate_id = await _holding(db, 0.5)
    writes = journal_for(db).transactions
    refused = await _readmit(db, debate_id, _estimate(0.4, 0.8))
    assert refused is None
    assert await _held(db, debate_id) == 0.8
    assert journal_for(db).transactions == writes   # its own transaction, not the journal's


async def test_a_debate_the_day_has_no_room_for_is_refused_and_granted_nothing(
        db: Database) -> None:
    debate_id = await _holding(db, 0.5)
    refused = await _readmit(db, debate_id, _estimate(0.9, 1.2), cap_usd=0.6)
    assert refused is not None and refused.startswith("refused by the worker that claimed it")
    assert await _held(db, debate_id) == 0.5
