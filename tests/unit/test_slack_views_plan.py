"""The plan's chunks: states, escaping and bounds of model text, the title, the end state."""

from __future__ import annotations

import pytest
from slack_sdk.models.messages.chunk import Chunk

from bot.service.progress import PhaseState, PhaseView, Progress
from bot.slack.views import plan
from engine.domain import DebateRequest
from storage.records import DebateRecord, DebateStatus
from tests.fakes.slack_streams import chunk_problem


def _record(status: DebateStatus, cost: float = 0.0123, error: str = "") -> DebateRecord:
    return DebateRecord(id="d1", request=DebateRequest(topic="T?"), mode="structured",
                        preset="decision", status=status, cost_usd=cost, error=error)


@pytest.mark.parametrize(("state", "status"), [
    (PhaseState.PENDING, "pending"), (PhaseState.RUNNING, "in_progress"),
    (PhaseState.DONE, "complete"), (PhaseState.PARTIAL, "error"), (PhaseState.FAILED, "error"),
])
def test_a_phase_state_is_a_task_status(state: PhaseState, status: str) -> None:
    chunk = plan.task_chunk(PhaseView("opening", state), None, judging=False)
    assert chunk["status"] == status and chunk["id"] == "phase-opening"
    assert chunk["title"] == "Opening" and chunk_problem(chunk) is None
    assert Chunk.parse(chunk) is not None


def test_model_text_is_escaped_and_bounded() -> None:
    notes = plan.PhaseNotes(highlights={"con": "x" * 5000, "pro": "<!channel> & <@U1> wins"})
    chunk = plan.task_chunk(PhaseView("opening", PhaseState.DONE), notes, judging=False)
    output = chunk["output"]
    assert output.startswith("For: &lt;!channel&gt; &amp; &lt;@U1&gt; wins · Against: x")
    assert len(output) <= plan.TASK_TEXT_MAX and output.endswith("…")
    assert "<" not in output and chunk_problem(chunk) is None


def test_a_partial_phase_says_why_and_never_reads_complete() -> None:
    why = plan.why_line("refused", "structured/opening/con", "I can't <!here> help")
    notes = plan.PhaseNotes(why=[why] * 10)
    chunk = plan.task_chunk(PhaseView("opening", PhaseState.PARTIAL, 1, 1), notes,
                            judging=False)
    assert chunk["status"] == "error"
    assert chunk["details"].startswith("1 missing: refused by the model: structured/opening/con")
    assert "&lt;!here&gt;" in chunk["details"] and len(chunk["details"]) <= plan.TASK_TEXT_MAX


def test_the_judges_fill_in_as_they_arrive() -> None:
    notes = plan.PhaseNotes(judges=[("risk", "pro"), ("cost <b>", None)])
    chunk = plan.task_chunk(PhaseView("judging", PhaseState.RUNNING), notes, judging=True,
                            planned=3)
    assert chunk["details"] == "2 of 3 judge(s) scored"
    assert chunk["output"] == "risk → For; cost &lt;b&gt; → no call"


def test_the_title_carries_the_cost_and_at_the_end_the_status() -> None:
    progress = Progress(cost_usd=0.0042, status=DebateStatus.JUDGING)
    assert plan.plan_title(progress, rehearsal=False) == "The judges are scoring · $0.0042 so far"
    done = plan.plan_title(progress, rehearsal=True, record=_record(DebateStatus.COMPLETED))
    assert done == "[Rehearsal] ✅ Debate finished · cost $0.0123"
    failed = plan.plan_title(progress, rehearsal=False, record=_record(DebateStatus.FAILED))
    assert failed.startswith("❌ Debate failed")


def test_when_it_ends_nothing_stays_pending() -> None:
    tasks = [{"type": "task_update", "id": "a", "title": "A", "status": "complete"},
             {"type": "task_update", "id": "b", "title": "B", "status": "pending"}]
    skipped = plan.ended(tasks, _record(DebateStatus.COMPLETED))
    assert [t["status"] for t in skipped] == ["complete", "complete"]
    assert skipped[1]["details"] == plan.NOT_NEEDED
    stopped = plan.ended(tasks, _record(DebateStatus.FAILED))
    assert stopped[1]["status"] == "error" and stopped[1]["details"] == plan.NOT_RUN
    assert stopped[0] == tasks[0]


def test_only_changed_tasks_are_sent_again() -> None:
    before = [{"id": "a", "status": "complete"}, {"id": "b", "status": "pending"}]
    after = [{"id": "a", "status": "complete"}, {"id": "b", "status": "in_progress"}]
    assert plan.changed(before, after) == [after[1]]
    assert plan.changed(after, after) == []


def test_a_failed_debate_says_why_as_the_stream_stops() -> None:
    text = plan.ending_text(_record(DebateStatus.FAILED, error="all <!channel> calls failed"),
                            with_result=False)
    assert "failed" in text and "&lt;!channel&gt;" in text
