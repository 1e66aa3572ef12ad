"""The daily budget: concurrent reservations never overshoot the cap, the ledger always adds up,
settling is idempotent, and the alert goes out once."""

from __future__ import annotations

import asyncio
from datetime import date, datetime

import pytest

from bot.service.purse import DbPurse
from engine.errors import BudgetExceeded
from storage import budget
from storage.budget import BudgetState
from storage.db import Database
from tests.support import storage_fixtures as fx

db = fx.db  # fixture (until conftest.py imports it)
DAY = date(2024, 11, 22)


async def _reserve(db: Database, debate_id: str, amount: float, cap: float = 10.0) -> BudgetState:
    async with db.transaction() as session:
        return await budget.reserve(session, day=DAY, cap_usd=cap, amount_usd=amount,
                                    debate_id=debate_id)


async def _ledger_matches(db: Database) -> BudgetState:
    async with db.transaction(readonly=True) as session:
        state = await budget.state(session, DAY)
        entries = await budget.ledger(session, day=DAY)
    by_kind = {kind: sum(e.amount_usd for e in entries if e.kind == kind)
               for kind in ("reserve", "release", "settle")}
    assert state.reserved_usd == pytest.approx(by_kind["reserve"] - by_kind["release"])
    assert state.spent_usd == pytest.approx(by_kind["settle"])
    return state


async def test_concurrent_reservations_never_exceed_the_cap(db: Database) -> None:
    attempts = 100 if db.dialect == "postgresql" else 20

    async def attempt(i: int) -> bool:
        try:
            await _reserve(db, f"d{i}", 1.0)
        except BudgetExceeded:
            return False
        return True

    outcomes = await asyncio.gather(*(attempt(i) for i in range(attempts)))
    assert sum(outcomes) == 10
    state = await _ledger_matches(db)
    assert state.reserved_usd == pytest.approx(10.0)
    assert state.remaining_usd == pytest.approx(0.0)
    async with db.transaction(readonly=True) as session:
        reserves = [e for e in await budget.ledger(session, day=DAY) if e.kind == "reserve"]
    assert len(reserves) == 10


async def test_refusal_carries_the_figures(db: Database) -> None:
    await _reserve(db, "a", 7.5)
    with pytest.raises(BudgetExceeded) as caught:
        await _reserve(db, "b", 3.0)
    assert caught.value.estimate_usd == 3.0
    assert caught.value.remaining_usd == pytest.approx(2.5)
    assert "$2.50" in str(caught.value)


async def test_refusal_at_a_small_cap_shows_figures_that_compare(db: Database) -> None:
    await _reserve(db, "a", 0.0097, cap=0.01)
    with pytest.raises(BudgetExceeded) as caught:
        await _reserve(db, "b", 0.0049, cap=0.01)
    assert str(caught.value) == ("today's budget has $0.0003 of $0.0100 left; this debate "
                                 "needs about $0.0049")


async def test_settle_books_actual_cost_once(db: Database) -> None:
    await _reserve(db, "a", 2.0)
    await _reserve(db, "b", 1.0)
    for _ in range(2):  # the second settle is a no-op
        async with db.transaction() as session:
            state = await budget.settle(session, day=DAY, debate_id="a", actual_usd=0.75)
    assert (state.reserved_usd, state.spent_usd) == (pytest.approx(1.0), pytest.approx(0.75))
    assert state.remaining_usd == pytest.approx(8.25)
    await _ledger_matches(db)


async def test_a_retry_on_another_day_is_released_and_only_new_spend_booked(
    db: Database
) -> None:
    """Reserved on day 1, settled; retried and reserved on day 2; settled again with the total
    cost to date: day 2's hold is released and only the extra spend is booked."""
    day2 = date(2024, 11, 23)
    await _reserve(db, "a", 2.0)
    async with db.transaction() as session:
        await budget.settle(session, day=DAY, debate_id="a", actual_usd=0.5)
        await budget.reserve(session, day=day2, cap_usd=10.0, amount_usd=1.0, debate_id="a")
        first = await budget.settle(session, day=DAY, debate_id="a", actual_usd=0.8)
        again = await budget.settle(session, day=DAY, debate_id="a", actual_usd=0.8)
        other = await budget.state(session, day2)
    assert first == again
    assert (first.reserved_usd, first.spent_usd) == (0.0, pytest.approx(0.8))
    assert (other.reserved_usd, other.spent_usd) == (0.0, 0.0)
    await _ledger_matches(db)


async def test_release_gives_the_reservation_back_once(db: Database) -> None:
    await _reserve(db, "a", 4.0)
    for _ in range(2):
        async with db.transaction() as session:
            state = await budget.release(session, day=DAY, debate_id="a")
    assert state.reserved_usd == pytest.approx(0.0) and state.spent_usd == 0.0
    async with db.transaction() as session:  # settling after a release books spend only
        state = await budget.settle(session, day=DAY, debate_id="a", actual_usd=0.1)
    assert state.reserved_usd == pytest.approx(0.0) and state.spent_usd == pytest.approx(0.1)
    await _ledger_matches(db)


async def test_state_of_an_untouched_day_uses_the_given_cap(db: Database) -> None:
    async with db.transaction(readonly=True) as session:
        state = await budget.state(session, DAY, cap_usd=5.0)
    assert (state.cap_usd, state.remaining_usd, state.fraction, state.alert_due) == (
        5.0, 5.0, 0.0, False)


async def test_alert_is_due_past_the_fraction_and_marked_once(db: Database) -> None:
    state = await _reserve(db, "a", 7.0)
    assert not state.alert_due and state.fraction == pytest.approx(0.7)
    state = await _reserve(db, "b", 1.0)
    assert state.alert_due

    async def mark() -> bool:
        async with db.transaction() as session:
            return await budget.mark_alerted(session, DAY)

    assert sorted(await asyncio.gather(mark(), mark(), mark())) == [False, False, True]
    async with db.transaction(readonly=True) as session:
        after = await budget.state(session, DAY)
    assert after.alerted and not after.alert_due


async def test_a_lower_cap_applies_to_the_next_reservation(db: Database) -> None:
    await _reserve(db, "a", 3.0)
    with pytest.raises(BudgetExceeded):
        await _reserve(db, "b", 1.0, cap=3.5)
    state = await _reserve(db, "c", 0.5, cap=3.5)
    assert state.cap_usd == 3.5 and state.remaining_usd == pytest.approx(0.0)


async def test_a_running_debate_is_charged_out_of_its_hold_and_topped_up_within_the_cap(
        db: Database) -> None:
    await _reserve(db, "a", 2.0, cap=5.0)
    await _reserve(db, "b", 2.5, cap=5.0)
    async with db.transaction() as session:
        await budget.charge(session, day=DAY, debate_id="a", amount_usd=1.5)
        assert await budget.held(session, "a") == pytest.approx(0.5)
        granted = await budget.extend(session, day=DAY, cap_usd=5.0, amount_usd=2.0,
                                      debate_id="a")
        assert granted == pytest.approx(0.5)  # all the day had left
        assert await budget.extend(session, day=DAY, cap_usd=5.0, amount_usd=1.0,
                                   debate_id="a") == 0.0
        await budget.charge(session, day=DAY, debate_id="a", amount_usd=1.25)  # 0.25 over
    state = await _ledger_matches(db)
    assert state.spent_usd == pytest.approx(2.75) and state.reserved_usd == pytest.approx(2.5)
    async with db.transaction() as session:  # settling finds everything already booked
        await budget.settle(session, day=DAY, debate_id="a", actual_usd=2.75)
    state = await _ledger_matches(db)
    assert state.spent_usd == pytest.approx(2.75) and state.reserved_usd == pytest.approx(2.5)


async def test_the_holds_of_debates_starting_together_are_read_in_one_query(db: Database
                                                                           ) -> None:
    await _reserve(db, "a", 2.0)
    await _reserve(db, "b", 1.5)
    async with db.transaction() as session:
        await budget.charge(session, day=DAY, debate_id="a", amount_usd=0.5)
    async with db.transaction(readonly=True) as session:
        held, _ = await budget.held_batch(session, ["b", "a", "nobody"], False)
        one_by_one = [await budget.held(session, d) for d in ("b", "a", "nobody")]
    assert held == one_by_one == [pytest.approx(1.5), pytest.approx(1.5), 0.0]


async def test_a_debate_tops_up_to_its_ceiling_once_over_all_its_runs(db: Database) -> None:
    """A run that topped up, crashed and was resumed by another worker: the new run's purse
    counts the earlier top-up, so the debate never holds more than its ceiling in all."""
    await _reserve(db, "a", 1.0)

    def purse() -> DbPurse:   # a run's purse, as a worker builds it
        return DbPurse(db, debate_id="a", day=DAY, cap_usd=10.0, ceiling_usd=2.5,
                       clock=lambda: datetime(2024, 11, 22, 12))

    assert await purse().top_up(1.0) == pytest.approx(1.0)       # the first run
    again = purse()                                               # resumed after a crash
    assert await again.top_up(1.0) == pytest.approx(0.5)         # up to the ceiling: 2.5
    assert await again.top_up(1.0) == 0.0
    async with db.transaction() as session:
        assert await budget.reserved_total(session, "a") == pytest.approx(2.5)
        await budget.charge(session, day=DAY, debate_id="a", amount_usd=0.4)
        assert await budget.reserved_total(session, "a") == pytest.approx(2.5)  # spent: same
