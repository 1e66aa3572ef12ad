"""Slack text that no database can store (a lone UTF-16 surrogate, which JSON can carry as
"\\ud800", or NUL) is refused where it enters, the person told in the thread, nothing stored or
started: DMs, mentions, replies in a debate's thread, `/debate`, its form, the appeal shortcut.
Signed requests to the real Bolt app against FakeSlack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.slack.views import modals as M
from storage import slack as slack_store
from tests.support.slack_fixtures import CHANNEL, USER, Harness, sign, slack, slack_harness

__all__ = ["slack"]

DM = "D0ALICE1"
KEPT_NOTHING = "I kept nothing and started nothing"


async def _stored(h: Harness, channel: str, thread_ts: str) -> list[str]:
    async with h.rt.db.transaction(readonly=True) as session:
        seen = await slack_store.thread_messages(session, channel_id=channel,
                                                 thread_ts=thread_ts)
    return [m.text for m in seen]


async def _told(h: Harness, channel: str, thread_ts: str) -> str:
    def check() -> str | None:
        return next((str(m["text"]) for m in h.fake.replies(channel, thread_ts)
                     if KEPT_NOTHING in str(m.get("text", ""))), None)
    found: str = await h.wait_until(check, what="the refusal in the thread")
    return found


async def test_a_dm_with_a_lone_surrogate_is_answered_and_nothing_is_stored(
        slack: Harness) -> None:
    ts = slack.fake.add_message(DM, "(placeholder)", user=USER)
    event = {"type": "message", "channel": DM, "channel_type": "im", "user": USER, "ts": ts,
             "text": "Should we \ud800 adopt Kafka?", "event_ts": ts}
    assert (await slack.event(event)).status == 200
    said = await _told(slack, DM, ts)
    assert "lone UTF-16 surrogate" in said
    assert await _stored(slack, DM, ts) == [] and await slack.debates() == []
    ok = {**event, "text": "Should we adopt Kafka?"}   # the same person, in plain text, works
    await slack.event(ok)
    assert (await slack.one_debate()).request.topic == "Should we adopt Kafka?"


async def test_a_mention_with_a_surrogate_is_answered_once_and_chatter_only_dropped(
        slack: Harness) -> None:
    root = slack.fake.add_message(CHANNEL, "(root)", user="UBOB")
    text = "<@UBOT0001> debate is \udfff good?"
    for kind in ("message", "app_mention"):   # Slack sends both for a mention in a channel
        await slack.event({"type": kind, "channel": CHANNEL, "channel_type": "channel",
                           "user": USER, "ts": root, "text": text})
    await _told(slack, CHANNEL, root)
    chatter = slack.fake.add_message(CHANNEL, "(chatter)", user="UBOB")
    await slack.event({"type": "message", "channel": CHANNEL, "channel_type": "channel",
                       "user": "UBOB", "ts": chatter, "text": "lunch \x00 anyone?"})
    edit = {"type": "message", "subtype": "message_changed", "channel": CHANNEL,
            "message": {"user": "UBOB", "ts": chatter, "text": "lunch \ud83d?"}}
    await slack.event(edit)
    await slack.notifier.drain()
    assert sum(KEPT_NOTHING in str(m.get("text", ""))
               for m in slack.fake.replies(CHANNEL, root)) == 1
    assert slack.fake.replies(CHANNEL, chatter) == []
    assert await _stored(slack, CHANNEL, root) == [] == await _stored(slack, CHANNEL, chatter)
    assert await slack.debates() == []


async def test_debate_its_form_and_the_appeal_shortcut_refuse_broken_text(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, appeal_policy="No spam.") as h:
        reply = await h.command("Is NUL \x00 a topic?")
        assert reply.status == 200 and "cannot be kept" in reply.text
        assert "NUL" in reply.text
        await h.command("")
        view = (await h.fake.wait_for("views.open")).response["view"]
        values = {M.TOPIC_BLOCK: {M.TOPIC_ACTION: {"type": "plain_text_input",
                                                   "value": "Adopt \ud800 GraphQL?"}}}
        answer = (await h.submit_view(view, values, user=USER)).json()
        assert answer["response_action"] == "errors"
        assert "not text" in answer["errors"][M.TOPIC_BLOCK]
        ts = h.fake.add_message(CHANNEL, "(appealed)", user="UBOB")
        payload: dict[str, Any] = {
            "type": "message_action", "callback_id": "appeal_decision",
            "trigger_id": h.next_id("trig."), "user": {"id": USER}, "channel": {"id": CHANNEL},
            "response_url": h.fake.response_url(h.next_id("resp")), "message_ts": ts,
            "message": {"type": "message", "user": "UBOB", "ts": ts, "text": "spam \udc00"}}
        assert (await h.interaction(payload)).status == 200
        call = await h.fake.wait_for("response_url")
        assert KEPT_NOTHING in call.args["text"]
        assert await h.debates() == []


async def test_a_signed_body_that_is_not_utf8_is_a_400_not_a_traceback(
        slack: Harness, caplog: Any) -> None:
    body = b'{"type": "event_callback", "event": {"text": "\xed\xa0\x80"}}'
    headers = {"Content-Type": "application/json", **sign(body.decode("latin-1"))}
    async with slack.http.post(slack.url, data=body, headers=headers) as resp:
        assert resp.status == 400
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_reply_in_a_debates_thread_with_a_surrogate_is_answered_there(
        slack: Harness) -> None:
    await slack.command("Should we adopt Kafka?")
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    channel, root = debate.origin.channel_id, debate.origin.thread_ts
    assert channel and root
    ts = slack.fake.add_message(channel, "(reply)", user="UBOB", thread_ts=root)
    await slack.event({"type": "message", "channel": channel, "channel_type": "channel",
                       "user": "UBOB", "ts": ts, "thread_ts": root,
                       "text": "new evidence \ud800"})
    await _told(slack, channel, root)
    assert "new evidence" not in " ".join(await _stored(slack, channel, root))
