"""Group commit of engine events: many debates emitting at once share transactions, yet each
emit returns only when its own event is committed, and every chain stays intact and ordered."""

from __future__ import annotations

import asyncio

from engine.domain import Event, EventKind
from storage import audit
from storage.db import Database


async def test_concurrent_emits_are_committed_in_order_per_chain(db: Database) -> None:
    sink = audit.DbEventSink(db)

    async def debate(n: int) -> None:
        for i in range(15):
            await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id=f"d{n}",
                                  data={"i": i}))
            async with db.transaction(readonly=True) as session:   # committed on return
                events = await audit.events(session, f"d{n}")
            assert [e.data["i"] for e in events] == list(range(i + 1))

    await asyncio.gather(*(debate(n) for n in range(12)))
    async with db.transaction(readonly=True) as session:
        report = await audit.verify(session)
    assert report.ok and report.chains_checked == 12 and report.events_checked == 12 * 15


async def test_a_failing_event_does_not_sink_the_others_in_its_batch(db: Database) -> None:
    sink = audit.DbEventSink(db)
    bad = Event(kind=EventKind.STEP_FINISHED, debate_id="x" * 300, data={})  # id too long
    good = [Event(kind=EventKind.STEP_FINISHED, debate_id="ok", data={"i": i}) for i in range(5)]
    outcomes = await asyncio.gather(sink.emit(bad), *(sink.emit(e) for e in good),
                                    return_exceptions=True)
    async with db.transaction(readonly=True) as session:
        stored = await audit.events(session, "ok")
    assert [e.data["i"] for e in stored] == list(range(5))
    assert all(o is None for o in outcomes[1:])
    if db.dialect == "postgresql":  # SQLite does not enforce the column's length
        assert isinstance(outcomes[0], Exception)
