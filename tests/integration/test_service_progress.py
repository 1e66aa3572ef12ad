"""The event -> progress fold the Slack status message and the terminal panel share: phases and
their honest state, calls, cost, status, notes; from live events or the audit chain's pairs."""

from __future__ import annotations

from typing import Any

import pytest

from bot.service.progress import (
    PhaseState,
    Progress,
    judging_phases,
    phases_of,
    progress_for,
    progress_from,
)
from bot.service.providers import make_llm
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, Event, EventKind
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.protocols import get_protocol
from engine.settings import EngineSettings
from storage.records import DebateStatus

Pairs = list[tuple[str, dict[str, Any]]]

EVENTS: Pairs = [
    ("debate_started", {"topic": "x", "mode": "consensus"}),
    ("phase_started", {"phase": "opening"}),
    ("step_finished", {"cost_usd": 0.01}),
    ("step_finished", {"cost_usd": 0.02}),
    ("phase_finished", {"phase": "opening"}),
    ("phase_started", {"phase": "cross-examination"}),
    ("step_reused", {"key": "k"}),
    ("phase_finished", {"phase": "cross-examination"}),
    ("phase_started", {"phase": "closing"}),
    ("phase_finished", {"phase": "closing"}),
    ("phase_started", {"phase": "judging"}),
]
PLANNED = progress_for(EngineSettings(rehearsal=True),
                       DebateRequest(topic="x", mode="consensus")).planned


def states(progress: Progress) -> dict[str, tuple[PhaseState, str]]:
    return {p.name: (p.state, p.detail) for p in progress.phases()}


def test_progress_folds_phases_cost_and_status() -> None:
    progress = progress_from(EVENTS, Progress(planned=list(PLANNED)))
    assert progress.current == "judging" and progress.status is DebateStatus.JUDGING
    # the plan names its phases as the run does, so every finished phase counts against it
    assert PLANNED == ["opening", "cross-examination", "closing", "judging"]
    assert [p.name for p in progress.phases() if p.finished] == PLANNED[:3]
    assert progress.finished_phases == 3 and progress.calls_done == 3
    assert progress.cost_usd == pytest.approx(0.03)
    assert states(progress)["judging"] == (PhaseState.RUNNING, "")
    assert not Progress().apply("judge_scored", {})
    progress.apply("debate_finished", {"status": "completed", "cost_usd": 0.05})
    assert progress.status is DebateStatus.COMPLETED and progress.cost_usd == 0.05


def step(kind: str, key: str, phase: str, **data: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"key": key, "phase": phase, **data}


def phase(name: str, *steps: tuple[str, dict[str, Any]], finished: dict[str, Any] | None = None
          ) -> Pairs:
    return [("phase_started", {"phase": name}), *steps,
            ("phase_finished", {"phase": name, **(finished or {})})]


@pytest.mark.parametrize(("events", "expected"), [
    (phase("p", step("step_finished", "a", "p"), step("step_reused", "b", "p")),
     (PhaseState.DONE, "")),
    (phase("p", step("step_degraded", "a", "p"), step("step_degraded", "b", "p")),
     (PhaseState.FAILED, "nothing succeeded")),
    (phase("p", step("step_finished", "a", "p"), step("step_filtered", "b", "p")),
     (PhaseState.PARTIAL, "1 missing")),
    # the phase's own account wins: a stored filtered step read back is still missing
    (phase("p", step("step_finished", "a", "p"), step("step_reused", "b", "p"),
           finished={"filtered": ["b"], "degraded": []}), (PhaseState.PARTIAL, "1 missing")),
    (phase("p"), (PhaseState.DONE, "")),  # a phase without model calls
    # a resumed run: the step that degraded the first time succeeded the second
    (phase("p", step("step_degraded", "a", "p")) + phase("p", step("step_finished", "a", "p")),
     (PhaseState.DONE, "")),
    # the debate ended while the phase ran: nothing succeeded, or it was cut short
    ([("phase_started", {"phase": "p"}), ("debate_finished", {"status": "failed"})],
     (PhaseState.FAILED, "stopped, nothing succeeded")),
    ([("phase_started", {"phase": "p"}), step("step_finished", "a", "p"),
      ("debate_finished", {"status": "timed_out"})], (PhaseState.PARTIAL, "stopped")),
])
def test_a_phase_is_only_done_when_its_steps_succeeded(events: Pairs,
                                                       expected: tuple[PhaseState, str]) -> None:
    assert states(progress_from(events))["p"] == expected


def test_each_step_counts_once_and_problems_become_notes() -> None:
    progress = progress_from([
        step("step_retry", "a", "p", attempt=1, reason="429"),
        step("step_degraded", "a", "p", reason="gave up"),
        step("step_finished", "a", "p", cost_usd=0.5),
        step("step_filtered", "b", "p"),
    ], Progress(planned_calls=4))
    assert progress.calls_done == 2 and progress.cost_usd == 0.5
    assert progress.calls_missing == 1 and progress.calls_text() == "calls 2/4, 1 missing"
    assert progress.notes == ["retry a #1: 429", "degraded: a — gave up", "filtered: b"]


def test_unplanned_phases_follow_the_planned_ones() -> None:
    progress = progress_from(phase("round 2"), Progress(planned=["round 1", "final"]))
    assert [(p.name, p.state) for p in progress.phases()] == [
        ("round 1", PhaseState.PENDING), ("final", PhaseState.PENDING),
        ("round 2", PhaseState.DONE)]


@pytest.mark.parametrize(("mode", "first", "last"), [
    ("simple", "opening", "verdict"), ("consensus", "opening", "judging"),
    ("panel", "answers", "synthesis"), ("critique", "proposal", "final"),
    ("redteam", "analysis", "synthesis"),
])
def test_planned_phases_follow_the_plan(mode: str, first: str, last: str) -> None:
    settings = EngineSettings(rehearsal=True)
    progress = progress_for(settings, DebateRequest(topic="x", mode=mode))
    phases = progress.planned
    assert phases[0] == first and phases[-1] == last and len(set(phases)) == len(phases)
    plan = prepare(settings, DebateRequest(topic="x", mode=mode)).plan
    assert phases == phases_of(plan) and progress.planned_calls == len(plan.calls)
    assert progress.mode == mode and progress.topic == "x"
    assert progress_for(EngineSettings(), DebateRequest(topic="x", preset="nope")).planned == []


@pytest.mark.parametrize(("mode", "phase_name", "judging"), [
    ("simple", "verdict", True), ("simple", "rebuttal 1", False), ("panel", "synthesis", True),
    ("panel", "grading", True), ("redteam", "synthesis", True), ("redteam", "challenge", False),
    ("critique", "final", False), ("structured", "judging", True), ("unknown", "judging", False),
])
def test_the_modes_own_judging_phases_mark_the_debate_judging(mode: str, phase_name: str,
                                                             judging: bool) -> None:
    progress = progress_from([("debate_started", {"mode": mode}),
                              ("phase_started", {"phase": phase_name})])
    assert (progress.status is DebateStatus.JUDGING) is judging
    assert judging_phases(mode) == (get_protocol(mode).judging_phases if mode != "unknown"
                                    else frozenset())


async def _run(settings: EngineSettings, request: DebateRequest) -> tuple[list[Event], Any]:
    prepared = prepare(settings, request)
    sink = MemoryEventSink()
    llm = make_llm(settings)
    try:
        result = await run_debate(prepared, debate_id="d1", settings=settings, llm=llm,
                                  store=MemoryCheckpointStore(), sink=sink)
    finally:
        await llm.aclose()
    return list(sink.events), result


async def test_a_real_run_folds_to_its_plan() -> None:
    settings = EngineSettings(rehearsal=True)
    request = DebateRequest(topic="Tabs or spaces?", mode="structured")
    events, result = await _run(settings, request)
    progress = progress_for(settings, request)
    for event in events:
        progress.apply_event(event)
    assert all(p.state is PhaseState.DONE for p in progress.phases())
    assert progress.calls_done == progress.planned_calls == result.cost.calls
    assert progress.status is DebateStatus.COMPLETED


async def test_an_unreachable_provider_shows_every_phase_failed() -> None:
    """Issue 11: nothing succeeded, and no phase may show a ✓ for it."""
    settings = EngineSettings(openai_api_key="k", openai_base_url="http://127.0.0.1:9/v1",
                              max_retries=0)
    request = DebateRequest(topic="Down?", mode="simple", rounds=0)
    events, result = await _run(settings, request)
    progress = progress_for(settings, request)
    for event in events:
        progress.apply_event(event)
    assert result.status == "failed"
    assert {p.state for p in progress.phases()} == {PhaseState.FAILED}
    assert any(e.kind is EventKind.STEP_DEGRADED for e in events)
