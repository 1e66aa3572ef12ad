"""A debate's events on their way to its sink, in order.

Most go at once, and the debate goes on once the sink has them (for the audit chain: once their
links are committed). The few that nothing waits on are held and go with the next one: a phase's
or a round's end, and the evidence read as the next phase starts. So a phase boundary (the last
phase finished, its round reported, new evidence, the next phase started) is one write to the
chain, not three or four between two dependent rounds of calls. A debate that stops at an error
or a kill before its next event loses only held events whose phase a resumed debate runs again.
"""

from __future__ import annotations

from engine.domain import Event, EventKind
from engine.ports import EventSink, emit_all

#: events that go with the next one (every debate's last event, DEBATE_FINISHED, sends them)
HELD = frozenset({EventKind.PHASE_FINISHED, EventKind.ROUND_FINISHED, EventKind.EVIDENCE_ADDED})


class HeldEvents:
    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.held: list[Event] = []

    async def emit(self, event: Event) -> None:
        if event.kind in HELD:
            self.held.append(event)
            return
        held, self.held = self.held, []
        await emit_all(self.sink, [*held, event])

    async def flush(self) -> None:
        """Send what is held now (before a write that goes another way: a step's)."""
        if self.held:
            held, self.held = self.held, []
            await emit_all(self.sink, held)
