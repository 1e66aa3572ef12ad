"""A running debate's purse on the day's budget in the database (engine.ports.Purse): what it
holds, topped up up to its ceiling while the day has room, charged reply by reply.
Every worker and replica reads and writes the same rows, so the cap holds across processes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from storage import budget
from storage.db import Database
from storage.journal import BatchWriter, journal_for, lookups_for


class DbPurse:
    def __init__(self, db: Database, *, debate_id: str, day: date, cap_usd: float,
                 ceiling_usd: float, clock: Callable[[], datetime]) -> None:
        self.db = db
        self.debate_id = debate_id
        self.day = day                  # where spend no hold covers is booked (settle's day)
        self.cap_usd = cap_usd
        self.ceiling_usd = ceiling_usd  # the most it may ever hold, over all its runs
        self.clock = clock

    async def held(self) -> float:
        """Read with the holds of other debates starting at the same moment (one query)."""
        held: float = await lookups_for(self.db).read(budget.held_batch, self.debate_id)
        return held

    async def top_up(self, usd: float) -> float:
        """More money for this run, from today's free budget, never past its ceiling: what it
        holds in all counts every earlier top-up, also those of a run that crashed."""
        async with self.db.transaction() as session:
            room = self.ceiling_usd - await budget.reserved_total(session, self.debate_id)
            wanted = min(usd, room)
            if wanted <= 1e-9:
                return 0.0
            return await budget.extend(session, day=self.clock().date(), cap_usd=self.cap_usd,
                                       amount_usd=wanted, debate_id=self.debate_id)

    async def charge(self, usd: float) -> None:
        """A charge of its own (a call cancelled, or failed for good); a step's is committed
        with its checkpoint and audit link (bot/service/step_writes.py)."""
        await journal_for(self.db).write(*self.write_of(usd))

    def write_of(self, usd: float) -> tuple[BatchWriter, Any]:
        """`charge` as a journal write, for a caller that submits it with others."""
        return budget.charge_batch, budget.Charge(self.day, self.debate_id, usd)
