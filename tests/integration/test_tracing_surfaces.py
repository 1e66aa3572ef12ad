"""Where a debate's trace starts (docs/tracing.md), each surface through its real path with the
SDK's in-memory exporter: a signed `/debate` through the real Bolt app (its span holds the ack),
a DM to the app, a cron slot fired by the real scheduler; in each, the worker that runs the
debate continues the same trace (`claim debate`, then `invoke_workflow dialectic`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.scheduling.scheduler import Scheduler
from bot.service.settings import ServiceSettings
from bot.service.tracing import reset_tracing, setup_tracing
from bot.slack.listeners.commands import ACK_EVENT
from storage.records import DebateRecord
from tests.support.service_fixtures import rehearsal_settings, running_worker, runtime
from tests.support.slack_fixtures import Harness, slack_harness
from tests.support.storage_fixtures import migrated_database

DM = "D0ALICE1"
ALICE = "UALICE"
QUESTION = "Should we move billing to PostgreSQL?"
MORNING: dict[str, Any] = {
    "id": "morning", "cron": "0 8 * * 1-5", "timezone": "Europe/Paris", "channel": "C0MARKETS",
    "topics": ["Brent crude breaks $90", "The ECB cuts rates in June"]}
MONDAY_SLOT = "2024-05-06T06:00:00Z"          # Monday 08:00 in Paris
WAIT = 20.0


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    caught = InMemorySpanExporter()
    setup_tracing(ServiceSettings(), exporter=caught)
    yield caught
    reset_tracing()


@pytest.fixture
async def slack(tmp_path: Path, exporter: InMemorySpanExporter) -> AsyncIterator[Harness]:
    async with slack_harness(tmp_path) as harness:
        yield harness


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def ended(exporter: InMemorySpanExporter, *names: str) -> list[ReadableSpan]:
    """Every span once one of each of `names` has ended (the surface's span may end after the
    worker ran the debate it queued, and the worker's `claim debate` after the debate is
    stored as finished)."""
    async with asyncio.timeout(WAIT):
        while not all(named(list(exporter.get_finished_spans()), n) for n in names):
            await asyncio.sleep(0.02)
    return list(exporter.get_finished_spans())


def by_id(spans: list[ReadableSpan], span_id: int) -> ReadableSpan:
    return next(s for s in spans if s.context.span_id == span_id)


def worker_side(spans: list[ReadableSpan], record: DebateRecord) -> ReadableSpan:
    """The debate's workflow span, checked to sit under its worker's `claim debate` span."""
    [workflow] = [s for s in named(spans, "invoke_workflow dialectic")
                  if s.attributes and s.attributes["dialectic.debate.id"] == record.id]
    assert workflow.parent is not None
    claim = by_id(spans, workflow.parent.span_id)
    assert claim.name == "claim debate" and claim.attributes is not None
    assert claim.attributes["dialectic.debate.id"] == record.id
    return workflow


def assert_started_by(surface: ReadableSpan, spans: list[ReadableSpan],
                      record: DebateRecord) -> None:
    """`record` was queued inside `surface` and its worker's spans are in the same trace."""
    assert surface.parent is None  # the trace starts here
    trace_id = surface.context.trace_id
    assert record.origin.traceparent is not None
    assert record.origin.traceparent.split("-")[1] == f"{trace_id:032x}"
    workflow = worker_side(spans, record)
    assert workflow.context.trace_id == trace_id
    claim = by_id(spans, workflow.parent.span_id)  # type: ignore[union-attr]
    assert claim.parent is not None
    queued_in = by_id(spans, claim.parent.span_id)
    while queued_in.parent is not None:  # the span that queued it is the surface or in it
        queued_in = by_id(spans, queued_in.parent.span_id)
    assert queued_in is surface


async def test_a_slash_command_starts_the_trace_its_span_holding_the_ack(
        slack: Harness, exporter: InMemorySpanExporter) -> None:
    reply = await slack.command(QUESTION)
    assert reply.status == 200 and "Estimate" in reply.json()["text"]
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    record = await slack.rt.service.get(debate.id)
    spans = await ended(exporter, "slack /debate start", "claim debate")
    [command] = named(spans, "slack /debate start")
    assert command.attributes is not None and command.attributes["dialectic.surface"] == "slack"
    [ack] = [e for e in command.events if e.name == ACK_EVENT]
    assert ack.attributes is not None and ack.attributes["http.response.status_code"] == 200
    assert command.start_time is not None and command.end_time is not None
    assert command.start_time <= ack.timestamp <= command.end_time
    assert_started_by(command, spans, record)


async def test_bad_input_acks_inside_its_span_and_queues_nothing(
        slack: Harness, exporter: InMemorySpanExporter) -> None:
    reply = await slack.command("Should we? --preset nope")
    assert reply.status == 200 and "unknown preset" in reply.json()["text"]
    assert await slack.debates() == []
    [refused] = named(list(exporter.get_finished_spans()), "slack /debate start")
    assert [e.name for e in refused.events] == [ACK_EVENT]


async def test_a_dm_question_starts_the_trace(slack: Harness,
                                              exporter: InMemorySpanExporter) -> None:
    ts = slack.fake.add_message(DM, QUESTION, user=ALICE)
    await slack.event({"type": "message", "channel": DM, "channel_type": "im", "user": ALICE,
                       "ts": ts, "text": QUESTION, "event_ts": ts})
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    record = await slack.rt.service.get(debate.id)
    assert record.origin.channel_id == DM
    spans = await ended(exporter, "slack dm", "claim debate")
    [dm] = named(spans, "slack dm")
    assert dm.attributes is not None and dm.attributes["dialectic.slack.action"] == "dm"
    assert_started_by(dm, spans, record)


async def test_a_cron_slot_starts_the_trace_of_each_debate_it_queues(
        tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    settings = rehearsal_settings(schedules=(MORNING,), timezone="Europe/Paris",
                                  public_url="http://dialectic.test")
    now = datetime(2024, 5, 6, 6, 0, 4, tzinfo=UTC)
    async with migrated_database("sqlite", tmp_path) as db:
        rt = runtime(db, settings)
        scheduler = Scheduler(rt, settings.scheduling, clock=lambda: now, wait_timeout=30.0)
        try:
            async with running_worker(rt.service) as worker:
                rt.workers.append(worker)
                report = await scheduler.fire("morning")
        finally:
            scheduler.shutdown()
        assert report is not None and report.slot == MONDAY_SLOT
        records = [await rt.service.get(i) for i in report.debate_ids]
    assert len(records) == 2
    spans = list(exporter.get_finished_spans())
    [slot] = named(spans, "schedule morning")
    assert slot.attributes is not None
    assert slot.attributes["dialectic.schedule.slot"] == MONDAY_SLOT
    assert slot.attributes["dialectic.surface"] == "schedule"
    for record in records:
        assert record.origin.surface == "schedule"
        assert_started_by(slot, spans, record)
