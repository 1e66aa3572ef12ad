"""Reviews: create, find, and decide exactly once however many clicks race."""

from __future__ import annotations

import asyncio

import pytest

from storage import reviews
from storage.db import Database
from storage.errors import NotFound
from storage.records import Review, ReviewStatus
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


async def _new_review(db: Database, reason: str = "alpha 0.41 < 0.50") -> Review:
    debate = await add_debate(db)
    async with db.transaction() as session:
        return await reviews.create(session, debate_id=debate.id, reason=reason)


async def test_create_get_and_list_pending(db: Database) -> None:
    first = await _new_review(db, "irreconcilable")
    second = await _new_review(db)
    async with db.transaction() as session:
        await reviews.set_message(session, first.id, "C_REVIEW", "1700000000.1")
        got = await reviews.get(session, first.id)
        by_debate = await reviews.get_by_debate(session, second.debate_id)
        pending = await reviews.list_pending(session)
        none = await reviews.get_by_debate(session, "no-such-debate")
    assert (got.channel_id, got.message_ts, got.reason) == (
        "C_REVIEW", "1700000000.1", "irreconcilable")
    assert by_debate == second
    assert [r.id for r in pending] == [first.id, second.id]
    assert none is None


async def test_review_of_an_unknown_debate_is_not_found(db: Database) -> None:
    async with db.transaction() as session:
        with pytest.raises(NotFound):
            await reviews.create(session, debate_id="nope", reason="x")


async def test_decide_records_the_decision(db: Database) -> None:
    review = await _new_review(db)
    async with db.transaction() as session:
        decided = await reviews.decide(session, review_id=review.id,
                                       status=ReviewStatus.APPROVED, by="U_REVIEWER", note="fine")
        pending = await reviews.list_pending(session)
    assert decided is not None and decided.status is ReviewStatus.APPROVED
    assert decided.decided_by == "U_REVIEWER" and decided.decided_at is not None
    assert decided.decision_note == "fine"
    assert pending == []


async def test_concurrent_decisions_have_exactly_one_winner(db: Database) -> None:
    review = await _new_review(db)
    choices = [ReviewStatus.APPROVED, ReviewStatus.ESCALATED, ReviewStatus.RERUN] * 2

    async def click(i: int, status: ReviewStatus) -> Review | None:
        async with db.transaction() as session:
            return await reviews.decide(session, review_id=review.id, status=status, by=f"U{i}")

    outcomes = await asyncio.gather(*(click(i, s) for i, s in enumerate(choices)))
    winners = [o for o in outcomes if o is not None]
    assert len(winners) == 1
    async with db.transaction(readonly=True) as session:
        stored = await reviews.get(session, review.id)
    assert stored == winners[0]
    assert stored.status is choices[int((stored.decided_by or "U-1")[1:])]


async def test_decide_unknown_review_is_not_found(db: Database) -> None:
    async with db.transaction() as session:
        with pytest.raises(NotFound):
            await reviews.decide(session, review_id="nope", status=ReviewStatus.APPROVED, by="U")
