"""The thread's status message: the shared progress fold rendered live, then from the stored,
finished record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from slack_sdk.models.blocks import Block

from bot.service.progress import progress_for, progress_from
from bot.slack.views.debate import status
from engine.domain import DebateRequest
from engine.settings import EngineSettings
from storage.records import DebateRecord, DebateStatus
from tests.fakes.openai_server import FakeOpenAI
from tests.support.slack_fixtures import CHANNEL, slack_harness

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


def start() -> Any:
    return progress_for(EngineSettings(rehearsal=True), DebateRequest(topic="x", mode="consensus"))


def test_render_shows_live_progress_then_the_stored_record() -> None:
    progress = progress_from(EVENTS, start())
    live = status(record(), progress, rehearsal=True, transcript_url="https://d.test/debates/d1")
    assert live.text.startswith("[Rehearsal] Debate judging: ▰▰▰▱ 3/4 — judging")
    assert "calls 3/10" in str(live.blocks)
    progress.apply("phase_finished", {"phase": "judging"})
    final = status(record(DebateStatus.AWAITING_REVIEW, cost_usd=0.07), progress,
                   rehearsal=False, transcript_url=None, final=True)
    assert final.text == "Debate awaiting review: ▰▰▰▰ 4/4 — done"
    assert "$0.07" in str(final.blocks)
    for message in (live, final):
        assert all(b is not None for b in Block.parse_all(message.blocks))


def test_a_failed_debate_shows_its_phases_failed_not_done() -> None:
    failing = [("debate_started", {"mode": "consensus"}), ("phase_started", {"phase": "opening"}),
               ("step_degraded", {"key": "o/pro", "phase": "opening", "reason": "refused"}),
               ("step_degraded", {"key": "o/con", "phase": "opening", "reason": "refused"}),
               ("phase_finished", {"phase": "opening", "degraded": ["o/pro", "o/con"]}),
               ("debate_finished", {"status": "failed"})]
    progress = progress_from(failing, start())
    message = status(record(DebateStatus.FAILED, error="no model call succeeded"), progress,
                     rehearsal=False, final=True)
    text = str(message.blocks)
    assert "✗ opening (nothing succeeded)" in text and "✗ cross-examination (not run)" in text
    assert "✓" not in text and "no model call succeeded" in text


async def test_a_debate_whose_every_call_fails_shows_failed_phases_in_its_thread(
        tmp_path: Path) -> None:
    """Issue 11: the live status message never shows ✓ for a phase in which nothing succeeded."""
    async with FakeOpenAI() as openai:
        openai.fail(lambda body: True, 500, times=10_000)
        async with slack_harness(tmp_path, openai=openai, max_retries=0) as h:
            await h.command("Should we? --mode simple --rounds 0")
            debate = await h.one_debate()
            assert (await h.wait_finished(debate.id)).status is DebateStatus.FAILED
            await h.notifier.drain()
            await h.delivered()   # the final status is part of what the finish owes the thread
            root = h.fake.messages(CHANNEL)[0]
            status_message = h.fake.replies(CHANNEL, root["ts"])[0]
    shown = json.dumps(status_message["blocks"], ensure_ascii=False)
    assert status_message["text"].startswith("Debate failed")
    assert "✗ opening (nothing succeeded)" in shown and "✗ verdict (not run)" in shown
    assert "✓" not in shown
