"""A run's money when a call ends while another is being admitted: `Spending.settled` books the
ending call at once (it no longer waits for the admit's lock), and the admit asks the purse again
for what that call billed beyond its prediction, instead of refusing a call the day can pay."""

from __future__ import annotations

import asyncio

from engine.money.spending import Spending
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
    assert purse.asked == [0.5, 0.25]   # the second ask: what the first call billed beyond
    assert spending.owed("first") == 1.25 and spending.owed("first") == 0.0
    assert abs(spending.available - (1.0 + 0.75 - 1.25)) < 1e-9 and spending.pending == 0.5


async def test_settle_books_the_charge_on_the_purse_at_once() -> None:
    purse = MemoryPurse(limit=2.0)
    spending = Spending(purse)
    assert await spending.admit(1.0, phase="opening", after=None)
    await spending.settle(1.0, 0.75)
    assert purse.charged == 0.75 and spending.spent == 0.75 and spending.owed("") == 0.0
