"""Human review through the real Bolt app: only reviewers decide, a decision is applied once,
escalation asks why in a modal, a re-run starts a new debate; every press is audited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.slack.views import review as R
from storage import reviews
from storage.records import DebateStatus, ReviewStatus
from tests.support.slack_fixtures import (
    CHANNEL,
    REVIEW_CHANNEL,
    REVIEWER,
    STRICT,
    Harness,
    audit_kinds,
    blocks_text,
    has_actions,
    slack_harness,
)


async def _reviewed(h: Harness) -> tuple[str, str, str]:
    """A debate routed to review: (debate id, review id, request ts)."""
    await h.command("Should we rewrite the scheduler in Rust? --preset strict")
    debate = await h.one_debate()
    done = await h.wait_finished(debate.id)
    assert done.status is DebateStatus.AWAITING_REVIEW
    await h.fake.wait_for("chat.postMessage", lambda c: c.args.get("channel") == REVIEW_CHANNEL)

    async def stored() -> Any:
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get_by_debate(session, debate.id)
        return review if review is not None and review.message_ts else None

    review = await h.wait_until(stored, what="the review message to be stored")
    return debate.id, review.id, review.message_ts


async def test_an_unauthorised_press_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        reply = await h.press(R.APPROVE_ACTION, review_id, user="UMALLORY",
                              channel=REVIEW_CHANNEL, message_ts=ts)
        assert reply.status == 200
        await h.fake.wait_for("chat.postEphemeral")
        refusal = h.fake.ephemerals[-1]
        assert refusal["user"] == "UMALLORY" and "reviewers" in refusal["text"]

        async def refused() -> bool:
            return "review_refused" in await audit_kinds(h, debate_id)

        await h.wait_until(refused, what="the refusal to be audited")
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await reviews.get(session, review_id)).status is ReviewStatus.PENDING
        assert (await h.rt.service.get(debate_id)).status is DebateStatus.AWAITING_REVIEW
        assert has_actions(h.fake.message(REVIEW_CHANNEL, ts) or {})
        assert not h.fake.calls_to("chat.update") or all(
            c.args.get("ts") != ts for c in h.fake.calls_to("chat.update"))


async def test_approve_updates_the_request_once_even_on_a_double_click(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        press = {"user": REVIEWER, "channel": REVIEW_CHANNEL, "message_ts": ts}
        first = await h.press(R.APPROVE_ACTION, review_id, **press)
        second = await h.press(R.APPROVE_ACTION, review_id, **press)
        assert first.status == second.status == 200

        def decided() -> dict[str, Any] | None:
            message = h.fake.message(REVIEW_CHANNEL, ts) or {}
            return message if message.get("text", "").startswith("Review approved") else None

        message = await h.wait_until(decided, what="the request to show the decision")
        assert not has_actions(message) and f"Approved by <@{REVIEWER}>" in blocks_text(message)
        await h.fake.wait_for("chat.postEphemeral")
        assert "already decided" in h.fake.ephemerals[-1]["text"]
        record = await h.wait_finished(debate_id, [DebateStatus.APPROVED])
        assert record.origin.thread_ts is not None
        await h.wait_reply(CHANNEL, record.origin.thread_ts, "✅ Approved by")
        updates = [c for c in h.fake.calls_to("chat.update") if c.args.get("ts") == ts]
        assert len(updates) == 1
        h.assert_all_blocks_valid()


async def test_a_reviewer_group_member_may_decide(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT, reviewers=("S0REVIEW",)) as h:
        h.fake.set_usergroup("S0REVIEW", ["UCAROL"])
        debate_id, review_id, ts = await _reviewed(h)
        await h.press(R.APPROVE_ACTION, review_id, user="UCAROL", channel=REVIEW_CHANNEL,
                      message_ts=ts)
        await h.wait_finished(debate_id, [DebateStatus.APPROVED])
        assert h.fake.calls_to("usergroups.users.list")


async def test_escalate_asks_for_a_reason_in_a_modal(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        await h.press(R.ESCALATE_ACTION, review_id, user=REVIEWER, channel=REVIEW_CHANNEL,
                      message_ts=ts)
        opened = await h.fake.wait_for("views.open")
        view = opened.response["view"]
        assert view["callback_id"] == R.ESCALATE_MODAL and view["private_metadata"] == review_id
        values = {R.REASON_BLOCK: {R.REASON_ACTION: {"type": "plain_text_input",
                                                     "value": "The cost figures look <!here> off"}}}
        reply = await h.submit_view(view, values, user=REVIEWER)
        assert reply.status == 200
        await h.wait_finished(debate_id, [DebateStatus.ESCALATED])
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get(session, review_id)
        assert review.status is ReviewStatus.ESCALATED and "cost figures" in review.decision_note
        message = await h.wait_until(
            lambda: (h.fake.message(REVIEW_CHANNEL, ts) or {}).get("text", "").startswith(
                "Review escalated") and h.fake.message(REVIEW_CHANNEL, ts), what="escalated")
        assert "&lt;!here&gt;" in blocks_text(message) and "<!here>" not in blocks_text(message)
        again = await h.submit_view(view, values, user=REVIEWER)
        assert "Already decided (escalated" in again.json()["errors"][R.REASON_BLOCK]
        stranger = await h.submit_view(view, values, user="UMALLORY")
        assert "Only reviewers" in stranger.json()["errors"][R.REASON_BLOCK]


async def test_a_blank_reason_is_refused_in_the_form_and_changes_nothing(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        await h.press(R.ESCALATE_ACTION, review_id, user=REVIEWER, channel=REVIEW_CHANNEL,
                      message_ts=ts)
        view = (await h.fake.wait_for("views.open")).response["view"]
        for blank in ("", "   ", "\n\t ", "\u200b", "\u2060\ufeff\u00ad", "\u3164 \u2800"):
            values = {R.REASON_BLOCK: {R.REASON_ACTION: {"type": "plain_text_input",
                                                         "value": blank}}}
            reply = await h.submit_view(view, values, user=REVIEWER)
            assert reply.status == 200, reply
            answer = reply.json()
            assert answer["response_action"] == "errors"
            assert list(answer["errors"]) == [R.REASON_BLOCK]
            assert "Say why you escalate" in answer["errors"][R.REASON_BLOCK]
        values = {R.REASON_BLOCK: {R.REASON_ACTION: {"type": "plain_text_input",
                                                     "value": "stale \ud800"}}}
        broken = (await h.submit_view(view, values, user=REVIEWER)).json()
        assert "lone UTF-16 surrogate" in broken["errors"][R.REASON_BLOCK]
        without = await h.submit_view(view, {}, user=REVIEWER)
        assert list(without.json()["errors"]) == [R.REASON_BLOCK]
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await reviews.get(session, review_id)).status is ReviewStatus.PENDING
        assert (await h.rt.service.get(debate_id)).status is DebateStatus.AWAITING_REVIEW
        assert "review_decided" not in await audit_kinds(h, debate_id)
        values = {R.REASON_BLOCK: {R.REASON_ACTION: {"type": "plain_text_input",
                                                     "value": "  the sources are stale "}}}
        assert (await h.submit_view(view, values, user=REVIEWER)).status == 200
        await h.wait_finished(debate_id, [DebateStatus.ESCALATED])
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await reviews.get(session, review_id)).decision_note == (
                "the sources are stale")


async def test_rerun_starts_a_new_debate_in_the_same_channel(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        await h.press(R.RERUN_ACTION, review_id, user=REVIEWER, channel=REVIEW_CHANNEL,
                      message_ts=ts)

        async def child() -> Any:
            return next((d for d in await h.debates() if d.parent_id == debate_id), None)

        rerun = await h.wait_until(child, what="the re-run debate")
        assert rerun.request.topic == (await h.rt.service.get(debate_id)).request.topic
        assert rerun.origin.channel_id == CHANNEL and rerun.origin.thread_ts
        old = await h.rt.service.get(debate_id)
        assert old.origin.thread_ts is not None
        await h.wait_reply(CHANNEL, old.origin.thread_ts, "🔁 Re-run started")
        await h.wait_finished(rerun.id)




async def test_a_decision_made_in_the_console_is_told_in_slack(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        # what POST /api/reviews/{id}/decision does for a signed-in reviewer
        await h.rt.reviews.decide(review_id, ReviewStatus.ESCALATED, by=REVIEWER,
                                  note="needs legal", surface="web")

        def decided() -> dict[str, Any] | None:
            message = h.fake.message(REVIEW_CHANNEL, ts) or {}
            return message if message.get("text", "").startswith("Review escalated") else None

        message = await h.wait_until(decided, what="the request to show the decision")
        assert not has_actions(message) and "needs legal" in blocks_text(message)
        record = await h.rt.service.get(debate_id)
        assert record.origin.thread_ts is not None
        await h.fake.wait_for("chat.postMessage", lambda c: c.args.get("thread_ts") ==
                              record.origin.thread_ts and "Escalated by" in c.args.get("text", ""))
        press = await h.press(R.APPROVE_ACTION, review_id, user=REVIEWER,
                              channel=REVIEW_CHANNEL, message_ts=ts)   # a stale button
        assert press.status == 200
        await h.fake.wait_for("chat.postEphemeral")
        assert "already decided" in h.fake.ephemerals[-1]["text"]
