"""What the engine needs from outside (checkpoints, events, human evidence), and in-memory ones.

`storage` implements the checkpoint store and event log on a database; `bot` adds Slack and SSE
sinks. The in-memory versions serve the CLI and tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine.domain import Event, Evidence, StepRecord

# the provider door's port, which storage implements (storage/lessons.py); defined beside its one
# user, which may not import this module
from engine.provider.lessons import LessonBook as LessonBook

if TYPE_CHECKING:  # types only: the statistics themselves load when a debate runs
    from engine.reading.verdicts import ConsensusStats, Divergence
    from engine.settings import ThresholdSpec


class CheckpointStore(Protocol):
    """Finished steps by (debate, key). `put` returns the stored record: if another worker stored
    the same key first, its record wins and is returned, so a step is never counted twice."""

    async def get(self, debate_id: str, key: str) -> StepRecord | None: ...

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord: ...


class StepCache(Protocol):
    """Outputs reusable across debates (a judge's scorecard of an identical transcript)."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, output: dict[str, Any]) -> None: ...


class Purse(Protocol):
    """The money one debate may spend, held in the day's budget (the service keeps it in the
    database, so every worker and replica sees the same money; see engine/money/spending.py)."""

    async def held(self) -> float:
        """What the debate holds and has not spent yet."""
        ...

    async def top_up(self, usd: float) -> float:
        """Hold up to `usd` more from the day's free budget; what was granted (0: none)."""
        ...

    async def charge(self, usd: float) -> None:
        """Book what a reply billed: spent, out of what the debate holds."""
        ...


class StepWrites(Protocol):
    """A finished step's writes made as one, after its reply (DBOS Transact's "one write per
    step"): its checkpoint (None: a degraded step is not stored), what its reply billed (booked
    out of the debate's hold; 0 without a purse or a bill), its event, to every sink, and with
    `cached_as` its output in the step cache under that key. The service commits them in one
    transaction (bot/service/step_writes.py), so a crash leaves all of them or none: the step is
    then made again, and charged once. Returns the stored checkpoint (another worker's, if it
    stored the key first)."""

    async def commit(self, debate_id: str, *, record: StepRecord | None, charge_usd: float,
                     event: Event, cached_as: str | None = None) -> StepRecord | None: ...


class SeparateWrites:
    """StepWrites one after another on the three ports (the terminal's memory stores, tests):
    the charge first, so a crash after it loses no money."""

    def __init__(self, store: CheckpointStore, purse: Purse | None, sink: EventSink,
                 cache: StepCache | None = None) -> None:
        self.store = store
        self.purse = purse
        self.sink = sink
        self.cache = cache

    async def commit(self, debate_id: str, *, record: StepRecord | None, charge_usd: float,
                     event: Event, cached_as: str | None = None) -> StepRecord | None:
        if charge_usd > 0 and self.purse is not None:
            await self.purse.charge(charge_usd)
        stored = await self.store.put(debate_id, record) if record is not None else None
        if cached_as is not None and self.cache is not None and record is not None \
                and record.output is not None:
            await self.cache.put(cached_as, record.output)
        await self.sink.emit(event)
        return stored


class PanelStatistics(Protocol):
    """What a judging phase computes over its panel's scores (engine/reading/verdicts.py, on numpy).
    `run_debate` hands it to the protocols through their context, so planning a debate (an
    estimate, a preset's plan) never loads the statistics."""

    def summarise(self, items: Sequence[str], scores: Mapping[str, Sequence[float | None]],
                  winners: Mapping[str, str | None], calls: Sequence[Sequence[str | None]], *,
                  weights: Mapping[str, float] | None = ...,
                  history: Mapping[str, Sequence[float]] | None = ...,
                  thresholds: ThresholdSpec = ..., seed: int = ...,
                  ) -> tuple[ConsensusStats, Divergence, list[float | None]]: ...

    def calibrate(self, scores: Mapping[str, Sequence[float | None]],
                  history: Mapping[str, Sequence[float]] | None = ...,
                  ) -> dict[str, list[float | None]]: ...


class MemoryPurse:
    """A purse in memory: `limit` to spend, `extra` it may top up; for tests and one process."""

    def __init__(self, limit: float, extra: float = 0.0) -> None:
        self.limit = limit
        self.extra = extra
        self.charged = 0.0

    async def held(self) -> float:
        return self.limit - self.charged

    async def top_up(self, usd: float) -> float:
        granted = min(usd, self.extra)
        self.extra -= granted
        self.limit += granted
        return granted

    async def charge(self, usd: float) -> None:
        self.charged += usd


class EventSink(Protocol):
    async def emit(self, event: Event) -> None: ...


class EvidenceSource(Protocol):
    """Human evidence recorded for a debate so far, oldest first."""

    async def evidence(self, debate_id: str) -> Sequence[Evidence]: ...


class MemoryCheckpointStore:
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], StepRecord] = {}
        self.puts = 0

    async def get(self, debate_id: str, key: str) -> StepRecord | None:
        return self._records.get((debate_id, key))

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        existing = self._records.setdefault((debate_id, record.key), record)
        if existing is record:
            self.puts += 1
        return existing

    def keys(self, debate_id: str) -> list[str]:
        return [k for (d, k) in self._records if d == debate_id]


class MemoryEventSink:
    """Keeps every event; `queue()` gives a live feed (used by the CLI's progress display)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._queues: list[asyncio.Queue[Event]] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        for queue in self._queues:
            queue.put_nowait(event)

    def queue(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._queues.append(queue)
        return queue


async def emit_all(sink: EventSink, events: Sequence[Event]) -> None:
    """`events` to `sink` in order: as one write where the sink can take them together (its
    `emit_all`: the audit chain's is one transaction), else one by one."""
    together = getattr(sink, "emit_all", None)
    if together is not None:
        await together(events)
        return
    for event in events:
        await sink.emit(event)


class FanOutSink:
    """Sends each event to several sinks in order; one failing sink does not starve the others."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = list(sinks)

    async def emit(self, event: Event) -> None:
        await self.emit_all((event,))

    async def emit_all(self, events: Sequence[Event]) -> None:
        errors: list[BaseException] = []
        for sink in self.sinks:
            try:
                await emit_all(sink, events)
            except Exception as exc:  # recorded and re-raised below, after the other sinks ran
                errors.append(exc)
        if errors:
            raise errors[0]


class MemoryEvidence:
    def __init__(self) -> None:
        self._items: dict[str, list[Evidence]] = {}

    def add(self, debate_id: str, item: Evidence) -> None:
        self._items.setdefault(debate_id, []).append(item)

    async def evidence(self, debate_id: str) -> Sequence[Evidence]:
        return list(self._items.get(debate_id, ()))


class MemoryStepCache:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.items.get(key)

    async def put(self, key: str, output: dict[str, Any]) -> None:
        self.items[key] = output


class NoEvidence:
    async def evidence(self, debate_id: str) -> Sequence[Evidence]:
        return ()
