"""Every result Slack shows carries its own feedback buttons, and no fitting ever cuts them: the
thread's result (an appeal "resolved automatically" included, which re-fits the summary under
its own line), each result in a digest's thread, and a brief. Long results
(tests/support/reply_fixtures.py) fill every message to Slack's limits."""

from __future__ import annotations

from typing import Any

import pytest

from bot.scheduling.reports import DigestReport, SignalOutcome
from bot.slack.notifier import result_message
from bot.slack.views import brief, digest
from bot.slack.views.common import Message
from bot.slack.views.feedback import FEEDBACK_BLOCK, WHY_BLOCK, parse_value
from engine.vocabulary import Mode, Routing
from storage.records import DebateStatus
from tests.support.reply_fixtures import ITEMS, long_result, long_text
from tests.support.slack_view_fixtures import TRANSCRIPT, WHEN, assert_message_valid, record_for

MODES = list(Mode)


def _feedback_for(message: Message) -> str:
    """The debate id the message's 👍 / 👎 and "Why?" rate; they close the message."""
    last: list[dict[str, Any]] = message.blocks[-2:]
    assert [b.get("block_id") for b in last] == [FEEDBACK_BLOCK, WHY_BLOCK], last
    thumbs = last[0]["elements"][0]
    up = parse_value(thumbs["positive_button"]["value"])
    down = parse_value(thumbs["negative_button"]["value"])
    why = last[1]["elements"][0]["value"]
    assert up is not None and down is not None and up[1] == down[1] == why
    return why


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("preset", ["default", "appeal"])
def test_the_threads_result_keeps_its_buttons(mode: Mode, preset: str) -> None:
    result = long_result(mode).model_copy(update={"routing": Routing.AUTO_APPROVE})
    record = record_for(result, id="d-long", preset=preset, status=DebateStatus.COMPLETED)
    message = result_message(record, transcript_url=TRANSCRIPT, thresholds=None)
    assert message is not None
    assert_message_valid(message)
    assert _feedback_for(message) == "d-long"
    if preset == "appeal":
        assert "Resolved automatically" in message.blocks[0]["text"]["text"]


def test_each_result_in_a_digests_thread_has_its_own_buttons() -> None:
    outcomes = tuple(SignalOutcome(title=long_text(f"signal-{i}"), status="completed",
                                   debate_id=f"d-{i}", url=TRANSCRIPT,
                                   result=long_result(MODES[i % len(MODES)]).model_copy(
                                       update={"id": f"d-{i}"}),
                                   reason="")
                     for i in range(ITEMS))
    failed = SignalOutcome(title="a signal whose debate failed", status="failed",
                           debate_id="d-failed", url=TRANSCRIPT, reason="the provider was down")
    report = DigestReport(schedule_id="morning", slot="2024-05-01", when=WHEN,
                          outcomes=(*outcomes, failed))
    details = digest.digest_details(report)
    assert len(details) == ITEMS + 1
    without = [m for m in details if m.text.startswith("a signal whose debate failed")]
    assert len(without) == 1   # no result, nothing to rate
    assert all(b.get("block_id") != FEEDBACK_BLOCK for b in without[0].blocks)
    rated = sorted(_feedback_for(m) for m in details if m is not without[0])
    assert rated == sorted(f"d-{i}" for i in range(ITEMS))
    for message in details:
        assert_message_valid(message)


def test_a_brief_with_a_result_has_buttons_and_one_without_has_none() -> None:
    result = long_result(Mode.CONSENSUS).model_copy(update={"id": "d-brief"})
    ready = brief.brief_message(result.topic, meeting_at=WHEN, result=result,
                                status=DebateStatus.COMPLETED, url=TRANSCRIPT, rehearsal=False)
    assert_message_valid(ready)
    assert _feedback_for(ready) == "d-brief"
    waiting = brief.brief_message("Adopt Kafka?", meeting_at=WHEN, result=None,
                                  status=DebateStatus.DEBATING, url=TRANSCRIPT, rehearsal=False)
    assert all(b.get("block_id") != FEEDBACK_BLOCK for b in waiting.blocks)
