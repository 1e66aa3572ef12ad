"""A debate's trace across the queue (docs/tracing.md): a schedule's slot has its span, the
context that queued a debate travels with its origin, and each attempt of a worker is a
`claim debate` span continuing it, linked to the attempt it resumes. Nothing here does anything
while tracing is off."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager

from bot.service.tracing import tracing
from engine.tracing import NO_TRACER, Span, Tracer
from storage import debates
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.records import DebateRecord, Origin

log = logging.getLogger("dialectic.tracing")


def traced_origin(origin: Origin) -> Origin:
    """`origin` carrying the current span's context (the API request, the Slack command, the
    cron slot that queues the debate), unless it carries one already."""
    traces = tracing()
    if not traces.enabled or origin.traceparent is not None:
        return origin
    return origin.model_copy(update={"traceparent": traces.traceparent()})


def slot_span(schedule_id: str, slot: str) -> AbstractContextManager[Span]:
    """A schedule's run of one slot (a cron slot, a brief) as a span: the root of the trace of
    every debate it queues (docs/tracing.md)."""
    return tracing().span(f"schedule {schedule_id}", {
        "dialectic.surface": "schedule", "dialectic.schedule.id": schedule_id,
        "dialectic.schedule.slot": slot})


@asynccontextmanager
async def attempt_span(db: Database, record: DebateRecord, *, worker_id: str
                       ) -> AsyncIterator[Tracer]:
    """This worker's attempt at `record` as a span in the debate's trace (a child of the span
    that queued it, linked to the attempt before when this one resumes it); the tracer the
    engine runs the debate with."""
    traces = tracing()
    if not traces.enabled:
        yield NO_TRACER
        return
    before = record.origin.attempt_traceparent if record.attempts > 1 else None
    attributes = {"dialectic.debate.id": record.id, "dialectic.attempt": record.attempts,
                  "dialectic.worker.id": worker_id, "dialectic.resumed": before is not None,
                  "messaging.operation.type": "process"}
    with traces.span("claim debate", attributes, kind="consumer",
                     parent=record.origin.traceparent, links=(before,) if before else ()):
        await _remember(db, record.id, traces.traceparent())
        yield traces.tracer


async def _remember(db: Database, debate_id: str, traceparent: str | None) -> None:
    """Store this attempt's context, for the attempt that may resume it; a database that fails
    here loses the link, not the debate."""
    try:
        async with db.transaction() as session:
            current = await debates.get(session, debate_id, for_update=True)
            await debates.update_origin(session, debate_id, current.origin.model_copy(
                update={"attempt_traceparent": traceparent}))
    except DATABASE_ERRORS as exc:
        log.warning("could not store the trace context of debate %s (%s); a resumed attempt "
                    "will not link to this one", debate_id, exc)
