"""The status message: progress folded from engine events, rendered through bot.blocks."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.slack.status import Progress, judging_phases, planned_phases, progress_from, render
from engine.domain import DebateRequest
from engine.protocols import get_protocol
from engine.settings import EngineSettings
from storage.records import DebateRecord, DebateStatus

EVENTS: list[tuple[str, dict[str, Any]]] = [
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


def record(status: DebateStatus = DebateStatus.DEBATING, **extra: Any) -> DebateRecord:
    return DebateRecord(id="d1", request=DebateRequest(topic="Should we?"), mode="consensus",
                        preset="default", status=status, **extra)


PLANNED = planned_phases(EngineSettings(rehearsal=True), DebateRequest(topic="x", mode="consensus"))


def test_progress_folds_phases_cost_and_status() -> None:
    progress = progress_from(EVENTS, PLANNED)
    assert progress.phase == "judging" and progress.status is DebateStatus.JUDGING
    # the plan names its phases as the run does, so every finished phase counts against it
    assert PLANNED == ["opening", "cross-examination", "closing", "judging"]
    assert progress.done == PLANNED[:3] and progress.planned == PLANNED
    assert progress.cost_usd == pytest.approx(0.03)
    assert not Progress().apply("step_reused", {})
    progress.apply("debate_finished", {"status": "completed", "cost_usd": 0.05})
    assert progress.status is DebateStatus.COMPLETED and progress.cost_usd == 0.05


@pytest.mark.parametrize(("mode", "first", "last"), [
    ("simple", "opening", "verdict"), ("consensus", "opening", "judging"),
    ("panel", "answers", "synthesis"), ("critique", "proposal", "final"),
    ("redteam", "analysis", "synthesis"),
])
def test_planned_phases_follow_the_plan(mode: str, first: str, last: str) -> None:
    phases = planned_phases(EngineSettings(rehearsal=True), DebateRequest(topic="x", mode=mode))
    assert phases[0] == first and phases[-1] == last and len(set(phases)) == len(phases)
    assert planned_phases(EngineSettings(), DebateRequest(topic="x", preset="nope")) == []


@pytest.mark.parametrize(("mode", "phase", "judging"), [
    ("simple", "verdict", True), ("simple", "rebuttal 1", False), ("panel", "synthesis", True),
    ("panel", "grading", True), ("redteam", "synthesis", True), ("redteam", "challenge", False),
    ("critique", "final", False), ("structured", "judging", True), ("unknown", "judging", False),
])
def test_the_modes_own_judging_phases_mark_the_debate_judging(mode: str, phase: str,
                                                             judging: bool) -> None:
    progress = progress_from([("debate_started", {"mode": mode}),
                              ("phase_started", {"phase": phase})], [])
    assert (progress.status is DebateStatus.JUDGING) is judging
    assert judging_phases(mode) == (get_protocol(mode).judging_phases if mode != "unknown"
                                    else frozenset())


def test_render_shows_live_progress_then_the_stored_record() -> None:
    progress = progress_from(EVENTS, PLANNED)
    live = render(record(), progress, rehearsal=True, transcript_url="https://d.test/debates/d1")
    assert live.text.startswith("[Rehearsal] Debate judging: ▰▰▰▱ 3/4 — judging")
    progress.apply("phase_finished", {"phase": "judging"})
    final = render(record(DebateStatus.AWAITING_REVIEW, cost_usd=0.07), progress,
                   rehearsal=False, transcript_url=None, final=True)
    assert final.text == "Debate awaiting review: ▰▰▰▰ 4/4 — done"
    assert "$0.07" in str(final.blocks)
    for message in (live, final):
        assert all(b is not None for b in Block.parse_all(message.blocks))
