"""A run's money when a call ends while another is being admitted: `Spending.settled` books the
ending call at once (it no longer waits for the admit's lock), and the admit asks the purse again
for what that call billed beyond its prediction, instead of refusing a call the day can pay."""

from __future__ import annotations

import asyncio

import pytest

from engine.money.spending import HEADROOM, Spending
from engine.ports import MemoryPurse


class _SlowPurse(MemoryPurse):
    """Grants after `release` is set: a call can end while a top-up is on its way."""

    def __init__(self, limit: float, extra: float) -> None:
        super().__init__(limit, extra)
        self.asked: list[float] = []
        self.release = asyncio.Event()

    async def top_up(self, usd: float) -> float:
        self.asked.append(usd)
        await self.release.wait()
        return await super().top_up(usd)


async def test_a_call_billed_past_its_prediction_during_a_top_up_is_topped_up_again() -> None:
    purse = _SlowPurse(limit=1.0, extra=10.0)
    spending = Spending(purse)
    assert await spending.admit(1.0, phase="opening", after=None)   # holds exactly 1.0
    second = asyncio.create_task(spending.admit(0.5, phase="opening", after=None))
    while not purse.asked:
        await asyncio.sleep(0)
    spending.settled("first", predicted=1.0, billed=1.25)   # it cost a quarter more
    purse.release.set()
    assert await second
    room = HEADROOM * 0.5   # each ask: what is lacking, and room for the next calls' misses
    # the second: what the first call billed beyond its prediction (0.25) less the first ask's
    # room, plus room again
    assert purse.asked == [pytest.approx(0.5 + room), pytest.approx(0.25)]
    assert spending.owed("first") == 1.25 and spending.owed("first") == 0.0
    granted = 0.5 + room + 0.25
    assert abs(spending.available - (1.0 + granted - 1.25)) < 1e-9 and spending.pending == 0.5


async def test_settle_books_the_charge_on_the_purse_at_once() -> None:
    purse = MemoryPurse(limit=2.0)
    spending = Spending(purse)
    assert await spending.admit(1.0, phase="opening", after=None)
    await spending.settle(1.0, 0.75)
    assert purse.charged == 0.75 and spending.spent == 0.75 and spending.owed("") == 0.0


class _CountingPurse(MemoryPurse):
    def __init__(self, limit: float, extra: float) -> None:
        super().__init__(limit, extra)
        self.asked: list[float] = []

    async def top_up(self, usd: float) -> float:
        self.asked.append(usd)
        return await super().top_up(usd)


async def test_a_rounds_calls_running_a_little_over_their_plan_ask_the_purse_once() -> None:
    """Each call's real prompt runs ~3 % over the plan's estimate of it (what `rest` counted):
    the first top-up's room covers the round's next calls, so they start without a trip to the
    purse (a transaction each, one after another, before the round's last call went out)."""
    purse = _CountingPurse(limit=3.0, extra=10.0)   # the plan's estimate was held
    spending = Spending(purse)
    for left in (2, 1, 0):   # three calls of a round, each 1.03 where the plan said 1.0
        assert await spending.admit(1.03, rest=float(left), phase="opening", after=None)
    assert len(purse.asked) == 1


async def test_room_is_only_asked_for_a_ceiling_that_has_none_still_admits() -> None:
    """The purse grants what the day and the debate's ceiling leave: exactly what is lacking is
    enough, the room is not needed to start the call."""
    purse = _CountingPurse(limit=1.0, extra=0.5)   # the ceiling leaves 0.5 more
    spending = Spending(purse)
    assert await spending.admit(1.5, phase="opening", after=None)
    assert purse.asked == [pytest.approx(0.5 + HEADROOM * 1.5)]
    assert abs(spending.available - 1.5) < 1e-9
    assert not await spending.admit(0.1, phase="opening", after=None)   # nothing left
