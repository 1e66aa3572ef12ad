"""A debate's events in order: a phase's end, a round's and new evidence go with the next event
(engine/core/held_events.py), to every sink of a fan-out, in the order they were emitted."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.held_events import HeldEvents
from engine.domain import Event, EventKind
from engine.ports import FanOutSink, MemoryEventSink


class _Batches:
    """A sink that takes events together (as the audit chain does) and records each batch."""

    def __init__(self) -> None:
        self.batches: list[list[EventKind]] = []

    async def emit(self, event: Event) -> None:
        await self.emit_all((event,))

    async def emit_all(self, events: Sequence[Event]) -> None:
        self.batches.append([e.kind for e in events])


def _event(kind: EventKind) -> Event:
    return Event(kind=kind, debate_id="d1", data={})


async def test_a_phase_end_goes_with_the_next_event_in_order_to_every_sink() -> None:
    batches, plain = _Batches(), MemoryEventSink()
    line = HeldEvents(FanOutSink(batches, plain))
    for kind in (EventKind.PHASE_STARTED, EventKind.STEP_FINISHED, EventKind.PHASE_FINISHED,
                 EventKind.ROUND_FINISHED, EventKind.EVIDENCE_ADDED):
        await line.emit(_event(kind))
    # held: nothing of the boundary has gone yet
    assert batches.batches == [[EventKind.PHASE_STARTED], [EventKind.STEP_FINISHED]]
    await line.emit(_event(EventKind.PHASE_STARTED))
    assert batches.batches[-1] == [EventKind.PHASE_FINISHED, EventKind.ROUND_FINISHED,
                                   EventKind.EVIDENCE_ADDED, EventKind.PHASE_STARTED]
    assert [e.kind for e in plain.events] == [k for b in batches.batches for k in b]


async def test_flush_sends_what_is_held_and_nothing_twice() -> None:
    batches = _Batches()
    line = HeldEvents(batches)
    await line.flush()
    assert batches.batches == []
    await line.emit(_event(EventKind.PHASE_FINISHED))
    await line.flush()
    await line.flush()
    await line.emit(_event(EventKind.DEBATE_FINISHED))
    assert batches.batches == [[EventKind.PHASE_FINISHED], [EventKind.DEBATE_FINISHED]]


async def test_a_failing_sink_does_not_keep_the_batch_from_the_others() -> None:
    class Broken:
        async def emit(self, event: Event) -> None:
            raise RuntimeError("down")

    plain = MemoryEventSink()
    line = HeldEvents(FanOutSink(Broken(), plain))
    await line.emit(_event(EventKind.PHASE_FINISHED))
    try:
        await line.emit(_event(EventKind.PHASE_STARTED))
    except RuntimeError:
        pass
    else:
        raise AssertionError("the broken sink's error was swallowed")
    assert [e.kind for e in plain.events] == [EventKind.PHASE_FINISHED, EventKind.PHASE_STARTED]


async def test_an_evaluation_baselines_phase_ends_in_its_events() -> None:
    """The baseline of `dialectic eval` runs one phase and no debate end: its phase's end is
    sent all the same (engine/evaluation/run.py)."""
    import random

    from engine.evaluation.dataset import Item
    from engine.evaluation.run import baseline_context, baseline_plan, run_baseline
    from engine.ports import MemoryCheckpointStore
    from engine.provider.rehearsal import RehearsalModel
    from engine.settings import EngineSettings

    item = Item(id="q1", question="What is 2 + 2?", answer="4")
    sink = MemoryEventSink()
    plan = baseline_plan(item, "vote", 3, ())
    ctx = baseline_context(EngineSettings(rehearsal=True), carrier_id="eval-1", item=item,
                           plan=plan, llm=RehearsalModel(), store=MemoryCheckpointStore(),
                           sink=sink, purse=None, nonce="0" * 32)
    await run_baseline(ctx, item, "vote", samples=3, models=(), rng=random.Random(1))
    kinds = [e.kind for e in sink.events]
    assert kinds[0] is EventKind.PHASE_STARTED and kinds[-1] is EventKind.PHASE_FINISHED
    assert kinds.count(EventKind.STEP_FINISHED) == 3
