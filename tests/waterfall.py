"""docs/tracing.md's trace picture, drawn from a real trace: a consensus debate through the real
gateway against the fake OpenAI server (0.2 s a call), its spans caught by the SDK's in-memory
exporter and printed as a text waterfall (`make waterfall`). `make screenshots` draws the same
kind of trace as a page (tests/waterfall_page.py) and photographs it.

    python -m tests.waterfall [mode]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.service.settings import ServiceSettings
from bot.service.tracing import reset_tracing, setup_tracing
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.vocabulary import Mode
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

WIDTH = 40      # the bar's columns for the whole trace
NAME = 44       # the tree's columns


def tree(spans: list[ReadableSpan]) -> list[tuple[ReadableSpan, int]]:
    """Each span with its depth, children under their parent in start order (a span whose
    parent is not in the list is a root)."""
    children: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in spans:
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)
    rows: list[tuple[ReadableSpan, int]] = []

    def visit(span: ReadableSpan, depth: int) -> None:
        rows.append((span, depth))
        for child in sorted(children.get(span.context.span_id, []),
                            key=lambda s: (s.start_time or 0, s.name)):
            visit(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda s: (s.start_time or 0, s.name)):
        visit(root, 0)
    return rows


def waterfall(spans: list[ReadableSpan]) -> list[str]:
    """One line a span, in tree order, each with its offset, its duration and a bar on the
    trace's time axis."""
    start = min(s.start_time or 0 for s in spans)
    total = max((s.end_time or 0) - start for s in spans) or 1
    lines: list[str] = []
    for span, depth in tree(spans):
        begin = (span.start_time or 0) - start
        length = (span.end_time or 0) - (span.start_time or 0)
        left = round(begin / total * WIDTH)
        bar = " " * left + "█" * max(1, round(length / total * WIDTH))
        label = ("  " * depth + span.name)[:NAME]
        lines.append(f"{label:<{NAME}} {begin / 1e9:6.2f}s {length / 1e9:6.2f}s |{bar:<{WIDTH}}|")
    return lines


async def trace(mode: str = "consensus", *, topic: str = "Adopt Kafka?", latency: float = 0.2,
                faults: Callable[[FakeOpenAI], None] | None = None) -> list[ReadableSpan]:
    """The spans of one real debate in `mode` (the real gateway, the fake provider at `latency`
    seconds a call, with `faults` set on it first), caught by the SDK's in-memory exporter."""
    exporter = InMemorySpanExporter()
    traces = setup_tracing(ServiceSettings(), exporter=exporter)
    try:
        async with FakeOpenAI(latency=latency) as fake:
            if faults is not None:
                faults(fake)
            settings = gateway_settings(fake.base_url)
            llm = OpenAIGateway(settings)
            try:
                await run_debate(prepare(settings, DebateRequest(topic=topic, mode=Mode(mode))),
                                 debate_id="4f1c", settings=settings, llm=llm,
                                 store=MemoryCheckpointStore(), sink=MemoryEventSink(),
                                 tracer=traces.tracer)
            finally:
                await llm.aclose()
    finally:
        reset_tracing()
    return list(exporter.get_finished_spans())


def shown_faults(fake: FakeOpenAI) -> None:
    """The faults the picture shows: the first request answered 500 once (the client retries
    it: a `chat` span with `dialectic.retries` 1) and the risk judge's call refused with a 400
    (its spans fail with `LLMBadRequest`; the debate completes without that judge, partial)."""
    fake.fail(lambda body: True, 500)
    fake.fail("what could go wrong", 400, times=None)    # the risk judge's expertise


async def main(mode: str) -> None:
    print("\n".join(waterfall(await trace(mode))))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "consensus"))
