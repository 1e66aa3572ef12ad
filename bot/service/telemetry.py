"""Prometheus metrics for this process: debates, LLM calls, cost, durations. The HTTP surface
serves them at `/metrics`; worker-only processes on `DIALECTIC_METRICS_PORT` if set.
`/api/metrics` is the database-wide JSON view (every process's debates)."""

from __future__ import annotations

import functools

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from engine.domain import Event, EventKind
from storage.records import DebateRecord, Review

REGISTRY = CollectorRegistry(auto_describe=True)
SUBMITTED = Counter("dialectic_debates_submitted_total", "Debates queued", ["mode"],
                    registry=REGISTRY)
FINISHED = Counter("dialectic_debates_finished_total", "Debates finished", ["status", "routing"],
                   registry=REGISTRY)
STEPS = Counter("dialectic_llm_steps_total", "Debate steps by outcome", ["outcome"],
                registry=REGISTRY)
RETRIES = Counter("dialectic_llm_retries_total", "Provider calls retried", registry=REGISTRY)
COST = Counter("dialectic_llm_cost_usd_total", "USD spent on LLM calls", registry=REGISTRY)
TOKENS = Counter("dialectic_llm_tokens_total", "Tokens reported by the provider", ["kind"],
                 registry=REGISTRY)
DURATION = Histogram("dialectic_debate_duration_seconds", "Wall time of finished debates",
                     buckets=(1, 5, 15, 30, 60, 120, 300, 600), registry=REGISTRY)
STREAMS = Gauge("dialectic_event_streams_open", "Server-Sent Event streams being served",
                registry=REGISTRY)
_OUTCOMES = {EventKind.STEP_FINISHED: "ok", EventKind.STEP_REUSED: "reused",
             EventKind.STEP_DEGRADED: "degraded", EventKind.STEP_FILTERED: "filtered",
             EventKind.STEP_REFUSED: "refused"}


class MetricsSink:
    """An engine event sink that only counts."""

    async def emit(self, event: Event) -> None:
        outcome = _OUTCOMES.get(event.kind)
        if outcome is not None:
            _steps(outcome).inc()
        if event.kind is EventKind.STEP_FINISHED:
            COST.inc(float(event.data.get("cost_usd", 0.0)))
            _tokens("prompt").inc(int(event.data.get("prompt_tokens", 0)))
            _tokens("completion").inc(int(event.data.get("completion_tokens", 0)))
            # parts of the two above: read from the provider's cache, and hidden reasoning
            _tokens("cached").inc(int(event.data.get("cached_tokens", 0)))
            _tokens("reasoning").inc(int(event.data.get("reasoning_tokens", 0)))
        elif event.kind is EventKind.STEP_RETRY:
            RETRIES.inc()


#: each label's child, looked up once (`labels()` takes the metric's lock and builds its key,
#: five times a step) and on first use, as before (a child is shown from its creation)
_steps = functools.cache(STEPS.labels)
_tokens = functools.cache(TOKENS.labels)
_SINK = MetricsSink()


def sink_for(record: DebateRecord) -> MetricsSink:
    return _SINK


def on_submitted(record: DebateRecord) -> None:
    SUBMITTED.labels(record.mode).inc()


async def on_finished(record: DebateRecord, review: Review | None) -> None:
    result = record.result
    FINISHED.labels(record.status.value, result.routing if result else "none").inc()
    if result is not None:
        DURATION.observe(result.elapsed_seconds)
