"""Feedback on results through the real Bolt app and the fake Slack: 👍 / 👎 under every result,
a press stored as user feedback (apart from the reviewers' labels), audited, acknowledged, a
second press replacing the first; the "Why?" form refusing a blank reason; forged ids storing
nothing; rehearsal feedback kept apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.slack.views import feedback as F
from storage import feedback, reviews
from tests.fakes.openai_server import FakeOpenAI
from tests.support.slack_fixtures import (
    CHANNEL,
    USER,
    Harness,
    audit_kinds,
    slack_harness,
)


async def _result(h: Harness) -> tuple[str, dict[str, Any]]:
    """A finished debate and its result message in the thread."""
    await h.command("Should we move billing to PostgreSQL?")
    debate = await h.one_debate()
    await h.wait_finished(debate.id)
    root = h.fake.messages(CHANNEL)[0]

    def summary() -> dict[str, Any] | None:
        return next((m for m in h.fake.replies(CHANNEL, root["ts"])
                     if "Debate result" in str(m.get("text", ""))), None)

    return debate.id, await h.wait_until(summary, what="the result message")


async def _stored(h: Harness, debate_id: str, user: str) -> feedback.Feedback | None:
    async with h.rt.db.transaction(readonly=True) as session:
        return await feedback.get(session, debate_id, user)


async def _thanked(h: Harness, user: str, count: int) -> dict[str, Any]:
    def said() -> list[dict[str, Any]]:
        mine = [e for e in h.fake.ephemerals if e["user"] == user]
        return mine if len(mine) >= count else []

    return (await h.wait_until(said, what=f"{count} ephemeral answers"))[-1]


async def test_a_press_is_stored_apart_audited_acknowledged_and_a_second_replaces(
        tmp_path: Path) -> None:
    async with FakeOpenAI() as openai, slack_harness(tmp_path, openai=openai) as h:
        debate_id, summary = await _result(h)
        blocks = json.dumps(summary["blocks"])
        assert '"type": "context_actions"' in blocks and '"type": "feedback_buttons"' in blocks
        assert f'"up:{debate_id}"' in blocks and F.WHY_ACTION in blocks
        h.assert_all_blocks_valid()
        reply = await h.interaction(h.fake.feedback_press(CHANNEL, summary["ts"], "up",
                                                          user=USER))
        assert reply.status == 200
        assert (await _thanked(h, USER, 1))["text"] == "Thanks — recorded."
        stored = await _stored(h, debate_id, USER)
        assert stored is not None and stored.rating == "up" and not stored.rehearsal
        await h.interaction(h.fake.feedback_press(CHANNEL, summary["ts"], "down", user=USER))
        assert "replaces your 👍 Helpful" in (await _thanked(h, USER, 2))["text"]
        await h.interaction(h.fake.feedback_press(CHANNEL, summary["ts"], "down", user=USER))
        assert "counts once" in (await _thanked(h, USER, 3))["text"]
        stored = await _stored(h, debate_id, USER)
        assert stored is not None and stored.rating == "down"
        assert (await audit_kinds(h, debate_id)).count("feedback_given") == 3
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get_by_debate(session, debate_id)
        assert review is None or review.decided_by is None   # no reviewer label was made
        report = await h.rt.service.oversight.judge_report()
        counted = {f.preset: (f.up, f.down, f.rehearsal) for f in report.feedback}
        assert counted == {"default": (0, 1, 0)}               # one reader, one thumb
        assert report.labelled == 0


async def test_why_refuses_a_blank_reason_and_stores_an_escaped_one(tmp_path: Path) -> None:
    async with FakeOpenAI() as openai, slack_harness(tmp_path, openai=openai) as h:
        debate_id, summary = await _result(h)
        await h.press(F.WHY_ACTION, debate_id, user=USER, channel=CHANNEL,
                      message_ts=summary["ts"])
        view = (await h.fake.wait_for("views.open")).response["view"]
        assert view["private_metadata"] == debate_id
        for blank in ("", "   \n", "\u200b", "\u2060\u00ad\u200e"):
            values = {F.REASON_BLOCK: {F.REASON_ACTION: {"type": "plain_text_input",
                                                         "value": blank}}}
            answer = (await h.submit_view(view, values, user=USER)).json()
            assert answer["response_action"] == "errors"
            assert "Say why" in answer["errors"][F.REASON_BLOCK]
        assert await _stored(h, debate_id, USER) is None
        assert "feedback_given" not in await audit_kinds(h, debate_id)
        values = {F.REASON_BLOCK: {F.REASON_ACTION: {
                      "type": "plain_text_input", "value": " <!channel> the sources are old "}},
                  F.RATING_BLOCK: {F.RATING_ACTION: {
                      "type": "radio_buttons", "selected_option": {"value": "down"}}}}
        answer = (await h.submit_view(view, values, user=USER)).json()
        assert answer["response_action"] == "update"
        assert "Thanks — recorded" in json.dumps(answer["view"], ensure_ascii=False)
        stored = await _stored(h, debate_id, USER)
        assert stored is not None and stored.rating == "down"
        assert stored.reason == "<!channel> the sources are old"
        assert "feedback_given" in await audit_kinds(h, debate_id)
        too_long = {F.REASON_BLOCK: {F.REASON_ACTION: {"type": "plain_text_input",
                                                       "value": "x" * 501}}}
        answer = (await h.submit_view(view, too_long, user=USER)).json()
        assert "500 characters" in answer["errors"][F.REASON_BLOCK]
        assert (await _stored(h, debate_id, USER)).reason == "<!channel> the sources are old"


async def test_forged_ids_get_one_line_and_store_nothing(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        debate_id, summary = await _result(h)
        press = h.fake.feedback_press(CHANNEL, summary["ts"], "up", user=USER)
        forged = [f"up:{debate_id}x", "up:", "sideways:" + debate_id, "up:" + "9" * 300]
        for n, value in enumerate(forged, start=1):
            action = {**press["actions"][0], "value": value}
            assert (await h.interaction({**press, "actions": [action]})).status == 200
            said = await _thanked(h, USER, n)
            assert said["text"] == "⚠ I cannot find that result; nothing was recorded."
        other_team = {**press, "team": {"id": "TOTHER"}, "user": {"id": "UOTHER"}}
        assert (await h.interaction(other_team)).status == 200   # refused at the gate
        await h.press(F.WHY_ACTION, "nope", user=USER, channel=CHANNEL,
                      message_ts=summary["ts"])
        assert "cannot find" in (await _thanked(h, USER, len(forged) + 1))["text"]
        assert h.fake.calls_to("views.open") == []
        assert await _stored(h, debate_id, USER) is None
        assert await _stored(h, debate_id, "UOTHER") is None
        assert not [c for c in h.fake.calls_to("chat.postEphemeral")
                    if c.args.get("user") == "UOTHER"]   # not even an answer
        assert "feedback_given" not in await audit_kinds(h, debate_id)


async def test_feedback_on_a_rehearsal_is_kept_apart(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:                 # the offline rehearsal model
        debate_id, summary = await _result(h)
        await h.interaction(h.fake.feedback_press(CHANNEL, summary["ts"], "up", user=USER))
        said = await _thanked(h, USER, 1)
        assert "Rehearsal result" in json.dumps(said["blocks"], ensure_ascii=False)
        stored = await _stored(h, debate_id, USER)
        assert stored is not None and stored.rehearsal and stored.rating == "up"
        report = await h.rt.service.oversight.judge_report()
        assert [(f.up, f.down, f.rated, f.rehearsal) for f in report.feedback] == [(0, 0, 0, 1)]
