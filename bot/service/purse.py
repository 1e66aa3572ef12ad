"""A running debate's purse on the day's budget in the database (engine.ports.Purse): what it
holds, topped up up to its ceiling while the day has room, charged reply by reply.
Every worker and replica reads and writes the same rows, so the cap holds across processes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

from storage import budget
from storage.db import Database
from storage.journal import journal_for, lookups_for


class DbPurse:
    def __init__(self, db: Database, *, debate_id: str, day: date, cap_usd: float,
                 room_usd: float, clock: Callable[[], datetime]) -> None:
        self.db = db
        self.debate_id = debate_id
        self.day = day                  # where spend no hold covers is booked (settle's day)
        self.cap_usd = cap_usd
        self.room_left = max(room_usd, 0.0)  # what it may still add: its ceiling less its hold
        self.clock = clock

    async def held(self) -> float:
        """Read with the holds of other debates starting at the same moment (one query)."""
        held: float = await lookups_for(self.db).read(budget.held_batch, self.debate_id)
        return held

    async def top_up(self, usd: float) -> float:
        """More money for this run, from today's free budget, never past its ceiling."""
        wanted = min(usd, self.room_left)
        if wanted <= 0:
            return 0.0
        async with self.db.transaction() as session:
            granted = await budget.extend(session, day=self.clock().date(), cap_usd=self.cap_usd,
                                          amount_usd=wanted, debate_id=self.debate_id)
        self.room_left -= granted
        return granted

    async def charge(self, usd: float) -> None:
        """Committed with the step's checkpoint and audit links (the journal's group commit)."""
        await journal_for(self.db).write(budget.charge_batch,
                                         budget.Charge(self.day, self.debate_id, usd))
