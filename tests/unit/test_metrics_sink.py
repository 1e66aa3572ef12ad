"""The metrics sink counts each step's outcome and tokens under the right labels (each label's
child is looked up once: bot/service/telemetry.py)."""

from __future__ import annotations

from bot.service import telemetry
from engine.domain import Event, EventKind


def _value(name: str, **labels: str) -> float:
    return telemetry.REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_finished_step_counts_its_outcome_and_each_kind_of_token() -> None:
    kinds = ("prompt", "completion", "cached", "reasoning")
    before = {kind: _value("dialectic_llm_tokens_total", kind=kind) for kind in kinds}
    ok, degraded = (_value("dialectic_llm_steps_total", outcome=o) for o in ("ok", "degraded"))
    sink = telemetry.MetricsSink()
    for _ in range(2):
        await sink.emit(Event(kind=EventKind.STEP_FINISHED, debate_id="d", data={
            "prompt_tokens": 1000, "completion_tokens": 200, "cached_tokens": 30,
            "reasoning_tokens": 4, "cost_usd": 0.01}))
    await sink.emit(Event(kind=EventKind.STEP_DEGRADED, debate_id="d"))
    after = {kind: _value("dialectic_llm_tokens_total", kind=kind) for kind in kinds}
    assert {k: after[k] - before[k] for k in kinds} == {
        "prompt": 2000, "completion": 400, "cached": 60, "reasoning": 8}
    assert _value("dialectic_llm_steps_total", outcome="ok") - ok == 2
    assert _value("dialectic_llm_steps_total", outcome="degraded") - degraded == 1
