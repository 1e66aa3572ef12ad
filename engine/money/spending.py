"""A debate's money as it runs: no call starts unless what the debate holds covers it AND the rest
of its plan, judging included, so money is never spent on arguments that cannot be judged, and
the day's cap holds for any input, however many debates run at once, anywhere.

The service holds the plan's high (verbose) estimate for each debate in the day's budget before
it is queued. While the debate runs, each call is predicted from its real prompt (a conservative
token bound) and its kind's high reply size, and the plan's calls not yet started at their high
sizes (engine/money/sizing.py; the predictions stretch as the debate's own replies come in). If the
hold cannot cover both, the purse is asked to top it up from the day's free budget, up to the
debate's ceiling; if it still cannot, the debate stops calling the provider before the call and
ends incomplete ("budget exhausted after phase X"); what was argued is still judged when the
judging fits. Each reply's real cost is charged as it
arrives (so a crash loses none of it), turning held money into spent money. The day's committed
money (holds + spend) therefore never passes the cap when a call starts; only what calls already
in flight bill beyond their prediction can (each bounded by its output cap).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from engine.ports import Purse

_EPSILON = 1e-9
_TOP_UPS = 3
#: a top-up asks for this much more than it lacks (of what it wants): a call's real prompt runs a
#: little over its plan's estimate, so without it each call of a round would be one more trip to
#: the purse (a transaction, one after another under the lock, before the round's last call)
HEADROOM = 0.05


@dataclass(slots=True)
class Exhaustion:
    """Where the money ran out: the phase of the first refused call, the last phase finished
    before it, and how many calls were refused."""

    phase: str
    after: str | None
    refused: int = 0

    def describe(self) -> str:
        where = f"after phase {self.after}" if self.after else f"in phase {self.phase}"
        calls = "call was" if self.refused == 1 else "calls were"
        return f"budget exhausted {where}: {self.refused} {calls} not made"


class Spending:
    """Tracks one run's money against its purse. Without a purse nothing is limited (a debate
    run in the terminal, with no budget to keep)."""

    def __init__(self, purse: Purse | None) -> None:
        self.purse = purse
        self.available = 0.0      # held for this debate and not yet spent
        self.pending = 0.0        # predicted cost of calls in flight
        self.spent = 0.0          # billed in this run
        self.exhausted: Exhaustion | None = None
        self._started = False
        self._made = False        # a call was admitted: there is something to judge
        self._lock = asyncio.Lock()
        self._owed: dict[str, float] = {}   # step key -> billed, not yet charged to the purse

    async def admit(self, predicted: float, *, phase: str, after: str | None,
                    rest: float = 0.0, judging: bool = False) -> bool:
        """May a call predicted to cost `predicted` start, with `rest` (the plan's calls not yet
        started) still covered after it? Only `predicted` is set aside for the call in flight.
        Once an argument is refused, no argument is: the debate has stopped arguing, and only
        its judging (`judging`) of what was argued may still run, if it fits."""
        if self.purse is None:
            return True
        async with self._lock:
            if self.exhausted is None or (judging and self._made):
                if not self._started:
                    self.available, self._started = await self.purse.held(), True
                await self._top_up(predicted + rest)
                if self.pending + predicted + rest - self.available <= _EPSILON:
                    self.pending += predicted
                    self._made = True
                    return True
                if self.exhausted is None:
                    self.exhausted = Exhaustion(phase=phase, after=after)
            assert self.exhausted is not None
            self.exhausted.refused += 1
            return False

    async def _top_up(self, wanted: float) -> None:
        """Hold enough for the calls in flight and `wanted` more (asking for `HEADROOM` more:
        the purse grants what fits the day and the debate's ceiling). A call that ends while the
        purse is asked (`settled` does not wait for the lock) may leave it short again: it is
        asked again, as long as it grants what was lacking."""
        for _ in range(_TOP_UPS):
            short = self.pending + wanted - self.available
            if short <= _EPSILON or self.purse is None:
                return
            granted = await self.purse.top_up(short + HEADROOM * wanted)
            self.available += granted
            if granted < short - _EPSILON:
                return   # the day or the ceiling has no more room

    async def settle(self, predicted: float, billed: float) -> None:
        """A call that was admitted has ended: its prediction is freed and what it billed is
        charged (turned from held into spent money)."""
        self.settled("", predicted, billed)
        await self.book("")

    def settled(self, key: str, predicted: float, billed: float) -> None:
        """`settle` without the charge: what step `key` billed is owed to the purse until the
        caller books it with the step's other writes (`owed`, engine/ports.py StepWrites) or
        alone (`book`)."""
        self.spent += billed
        if self.purse is None:
            return
        # no await here, so no lock: `admit` reads these fields afresh after each of its awaits
        self.pending = max(self.pending - predicted, 0.0)
        self.available -= billed
        if billed > 0:
            self._owed[key] = self._owed.get(key, 0.0) + billed

    def owed(self, key: str) -> float:
        """What step `key` billed and nobody booked yet; the caller books it now."""
        return self._owed.pop(key, 0.0)

    async def book(self, key: str) -> None:
        """Charge what step `key` owes on its own (a call cancelled or failed for good)."""
        owed = self.owed(key)
        if owed > 0 and self.purse is not None:
            await self.purse.charge(owed)
