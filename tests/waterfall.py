"""The README's trace picture, drawn from a real trace: a consensus debate through the real
gateway against the fake OpenAI server (0.2 s a call), its spans caught by the SDK's in-memory
exporter and printed as a text waterfall (`make waterfall`).

    python -m tests.waterfall [mode]
"""

from __future__ import annotations

import asyncio
import sys

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.service.settings import ServiceSettings
from bot.service.tracing import reset_tracing, setup_tracing
from engine.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

WIDTH = 40      # the bar's columns for the whole trace
NAME = 44       # the tree's columns


def waterfall(spans: list[ReadableSpan]) -> list[str]:
    """One line a span, children under their parent in start order, each with its offset, its
    duration and a bar on the trace's time axis."""
    start = min(s.start_time or 0 for s in spans)
    total = max((s.end_time or 0) - start for s in spans) or 1
    children: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in spans:
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def draw(span: ReadableSpan, depth: int) -> None:
        begin = (span.start_time or 0) - start
        length = (span.end_time or 0) - (span.start_time or 0)
        left = round(begin / total * WIDTH)
        bar = " " * left + "█" * max(1, round(length / total * WIDTH))
        label = ("  " * depth + span.name)[:NAME]
        lines.append(f"{label:<{NAME}} {begin / 1e9:6.2f}s {length / 1e9:6.2f}s |{bar:<{WIDTH}}|")
        for child in sorted(children.get(span.context.span_id, []),
                            key=lambda s: (s.start_time or 0, s.name)):
            draw(child, depth + 1)

    for root in children.get(None, []):
        draw(root, 0)
    return lines


async def main(mode: str) -> None:
    exporter = InMemorySpanExporter()
    traces = setup_tracing(ServiceSettings(), exporter=exporter)
    async with FakeOpenAI(latency=0.2) as fake:
        settings = gateway_settings(fake.base_url)
        llm = OpenAIGateway(settings)
        try:
            await run_debate(prepare(settings, DebateRequest(topic="Adopt Kafka?", mode=mode)),
                             debate_id="4f1c", settings=settings, llm=llm,
                             store=MemoryCheckpointStore(), sink=MemoryEventSink(),
                             tracer=traces.tracer)
        finally:
            await llm.aclose()
    reset_tracing()
    print("\n".join(waterfall(list(exporter.get_finished_spans()))))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "consensus"))
