"""The trace travels with the queued debate (docs/tracing.md): the span that queued it is the
parent of each worker's `claim debate` span, and an attempt that resumes a debate whose worker
died continues the same trace with a link to the attempt it takes over. Real SQLite and
PostgreSQL (scripts/with-postgres.sh), the real queue and lease."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.service.settings import ServiceSettings
from bot.service.traces import attempt_span, traced_origin
from bot.service.tracing import reset_tracing, setup_tracing
from engine.domain import utcnow
from storage import debates, queue
from storage.db import Database
from storage.records import Origin
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import make_record

db = fx.db  # fixture: SQLite, and PostgreSQL when one is given


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    caught = InMemorySpanExporter()
    yield caught
    reset_tracing()


async def _claim(db: Database, worker: str, *, later: float = 0.0):  # type: ignore[no-untyped-def]
    async with db.transaction() as session:
        return await queue.claim(session, worker_id=worker, lease_seconds=30,
                                 now=utcnow() + timedelta(seconds=later))


async def test_a_resumed_attempt_continues_the_trace_linked_to_the_crashed_one(
        db: Database, exporter: InMemorySpanExporter) -> None:
    traces = setup_tracing(ServiceSettings(), exporter=exporter)
    with traces.span("POST /api/debates", {}, kind="server"):
        origin = traced_origin(Origin(surface="api"))
    assert origin.traceparent is not None
    async with db.transaction() as session:
        await debates.create(session, record=make_record().model_copy(update={"origin": origin}),
                             topic_key="k")
    first = await _claim(db, "worker-a")
    assert first is not None and first.attempts == 1
    async with attempt_span(db, first, worker_id="worker-a"):
        pass  # the worker dies here: its lease runs out
    second = await _claim(db, "worker-b", later=60)
    assert second is not None and second.attempts == 2
    async with attempt_span(db, second, worker_id="worker-b"):
        pass
    surface, crashed, resumed = exporter.get_finished_spans()
    assert surface.name == "POST /api/debates"
    assert crashed.name == resumed.name == "claim debate"
    assert {s.context.trace_id for s in (surface, crashed, resumed)} == {
        surface.context.trace_id}
    assert crashed.parent is not None and crashed.parent.span_id == surface.context.span_id
    assert resumed.parent is not None and resumed.parent.span_id == surface.context.span_id
    assert not crashed.links
    assert [link.context.span_id for link in resumed.links] == [crashed.context.span_id]
    assert resumed.attributes is not None and resumed.attributes["dialectic.resumed"] is True
    assert resumed.attributes["dialectic.attempt"] == 2


async def test_tracing_off_queues_no_context() -> None:
    origin = traced_origin(Origin(surface="api"))
    assert origin.traceparent is None and origin.attempt_traceparent is None
