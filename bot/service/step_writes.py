"""A running debate's step writes as one (engine/ports.py StepWrites, DBOS Transact's "one write
per step"): the step's checkpoint, what its reply billed and its audit link are one submission to
the journal's group commit (storage/journal.py `write_together`), so they commit in one
transaction or not at all, with other debates' writes of the same moment. Before, each was its own
submission awaited in turn: three transactions (three trips through SQLite's writer) between a
reply and the next dependent round.

A crash before the commit leaves none of the three: the step has no checkpoint, so a resumed
debate makes the call again and charges it once (the lost call's bill is lost, as it was when the
crash came before the charge's own commit). The event reaches the other sinks (Slack, SSE, the
judging mark) after the commit, as it did after the audit link's own.
"""

from __future__ import annotations

from typing import Any

from bot.service.purse import DbPurse
from engine.domain import Event, StepRecord
from engine.ports import EventSink
from storage.audit import DbEventSink
from storage.caches import DbStepCache
from storage.db import Database
from storage.journal import BatchWriter, journal_for
from storage.steps import DbCheckpointStore


class DbStepWrites:
    def __init__(self, db: Database, *, store: DbCheckpointStore, purse: DbPurse | None,
                 audit: DbEventSink, after: EventSink, cache: DbStepCache | None = None) -> None:
        self.db = db
        self.cache = cache    # the judge cache: a judge's scorecard kept with its step
        self.store = store    # the run's own (a replay's store wraps it and puts through it)
        self.purse = purse
        self.audit = audit
        self.after = after    # every sink but the audit chain's

    async def commit(self, debate_id: str, *, record: StepRecord | None, charge_usd: float,
                     event: Event, cached_as: str | None = None) -> StepRecord | None:
        writes: list[tuple[BatchWriter, Any]] = []
        if record is not None:
            writes.append(self.store.write_of(debate_id, record))
        if charge_usd > 0 and self.purse is not None:
            writes.append(self.purse.write_of(charge_usd))
        writes.append(self.audit.write_of(event))
        if cached_as is not None and self.cache is not None and record is not None \
                and record.output is not None:
            writes.append(self.cache.write_of(cached_as, record.output))
        results = await journal_for(self.db).write_together(writes)
        stored: StepRecord | None = None
        if record is not None:
            stored = results[0]
            self.store.remember(debate_id, stored)
        await self.after.emit(event)
        return stored
