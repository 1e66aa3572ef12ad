"""CPU per LLM call with tracing off and on (docs/tracing.md): the same structured debates
through the real gateway against the fake OpenAI server (no latency), the process's CPU time
divided by the calls made. On: the SDK handing each ended span to an exporter that drops it (the
cost of building and ending spans, not of a network)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from bot.service.settings import ServiceSettings
from bot.service.tracing import reset_tracing, setup_tracing
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.tracing import NO_TRACER, Tracer
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

DEBATES = 20


class Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def _cpu_per_call(base_url: str, tracer: Tracer) -> float:
    settings = gateway_settings(base_url)
    llm = OpenAIGateway(settings)
    calls = 0
    try:
        started = time.process_time()
        for i in range(DEBATES):
            result = await run_debate(
                prepare(settings, DebateRequest(topic=f"Adopt Kafka {i}?", mode="structured")),
                debate_id=f"b{i}", settings=settings, llm=llm, store=MemoryCheckpointStore(),
                sink=MemoryEventSink(), tracer=tracer)
            calls += result.cost.calls
        return (time.process_time() - started) / calls
    finally:
        await llm.aclose()


async def run() -> None:
    print("\nTracing: CPU per LLM call (structured debates, the fake provider, no latency)")
    async with FakeOpenAI() as fake:
        await _cpu_per_call(fake.base_url, NO_TRACER)  # warm: imports, schemas, pools
        off = await _cpu_per_call(fake.base_url, NO_TRACER)
        on_tracing = setup_tracing(ServiceSettings(), exporter=Dropped())
        try:
            on = await _cpu_per_call(fake.base_url, on_tracing.tracer)
        finally:
            reset_tracing()
    print(f"  off  {off * 1e3:6.2f} ms CPU per call")
    print(f"  on   {on * 1e3:6.2f} ms CPU per call  ({(on - off) * 1e3:+.2f} ms: four spans a "
          "call with their attributes)")
