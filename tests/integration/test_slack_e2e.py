"""End to end: signed requests to the real Bolt app (inside bot.server's aiohttp app), the real
slack_sdk client against FakeSlack on loopback, debates on the rehearsal model or FakeOpenAI."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.slack.views import modals as M
from storage import evidence, reviews
from storage.records import DebateStatus
from tests.fakes.openai_server import FakeOpenAI, last_text
from tests.support.slack_fixtures import (
    CHANNEL,
    REVIEW_CHANNEL,
    REVIEWER,
    USER,
    Harness,
    audit_kinds,
    blocks_text,
    has_actions,
    sign,
    slack,
    slack_harness,
)

__all__ = ["slack"]

RAW_PINGS = ("<!channel>", "<!here>", "<!everyone>")


# --------------------------------------------------------------------------------------------
# /debate -> thread -> summary


async def test_slash_command_runs_a_debate_in_a_thread(slack: Harness) -> None:
    reply = await slack.command("Should we move billing to PostgreSQL?")
    assert reply.status == 200
    assert "Estimate" in reply.json()["text"]  # the ack carries the estimate
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    root = slack.fake.messages(CHANNEL)[0]
    assert root.get("thread_ts", root["ts"]) == root["ts"] and "Debate started" in root["text"]
    summary = await slack.wait_reply(CHANNEL, root["ts"], "[Rehearsal] Debate result")
    await slack.notifier.drain()

    replies = slack.fake.replies(CHANNEL, root["ts"])
    texts = [m["text"] for m in replies]
    status = replies[0]
    assert status["text"].startswith("[Rehearsal] Debate finished") and "4/4" in status["text"]
    assert slack.fake.calls_to("chat.update")  # the status was kept current in place
    phases = [t for t in texts if t.startswith("[Rehearsal] Phase ")]
    assert len(phases) == 4 and texts.index(phases[-1]) < texts.index(summary["text"])
    assert f"{slack.rt.settings.public_url}/debates/{debate.id}" in blocks_text(summary)
    stored = await slack.rt.service.get(debate.id)
    assert stored.origin.thread_ts == root["ts"] and stored.origin.status_ts == status["ts"]
    assert debate.id in root["text"] or debate.id in blocks_text(root)  # updated with the id
    slack.assert_all_blocks_valid()


def _pro_opening(body: dict[str, Any]) -> bool:
    system, user = last_text(body, "system"), last_text(body, "user")
    return "arguing FOR the proposition" in system and "Task: Give your opening" in user


def _judge(body: dict[str, Any]) -> bool:
    return "impartial debate judge" in last_text(body, "system")


HOSTILE_OPENING = {
    "summary": "Everyone must see this <!channel> right now & <!here>",
    "claims": [{"claim": "<!channel> Postgres wins <https://evil.example|click>",
                "evidence": "trust me <!everyone>"}],
}
# Every judge scores "position A" high: judges see the sides in alternating order, so the panel
# splits on which side wins -> very low alpha -> routed to a reviewer.
LOPSIDED = {
    "position_a": dict.fromkeys(("logic", "evidence", "rebuttal", "clarity", "relevance"), 9),
    "position_b": dict.fromkeys(("logic", "evidence", "rebuttal", "clarity", "relevance"), 2),
    "claims": [], "winner": "A", "rationale": "A is far stronger <!here>",
}


async def test_model_text_is_escaped_and_a_split_panel_reaches_the_review_channel(
        tmp_path: Path) -> None:
    async with FakeOpenAI() as openai:
        openai.script(_pro_opening, HOSTILE_OPENING)
        openai.script(_judge, LOPSIDED)
        async with slack_harness(tmp_path, openai=openai) as h:
            await h.command("Should we move billing to PostgreSQL?")
            debate = await h.one_debate()
            done = await h.wait_finished(debate.id)
            assert done.status is DebateStatus.AWAITING_REVIEW
            assert done.result is not None and done.result.routing in ("human_review", "escalate")
            request = await h.fake.wait_for(
                "chat.postMessage", lambda c: c.args.get("channel") == REVIEW_CHANNEL)
            root = h.fake.messages(CHANNEL)[0]
            await h.wait_reply(CHANNEL, root["ts"], "👀")
            await h.notifier.drain()
            content = h.posted_content()
            assert any("&lt;!channel&gt;" in c for c in content)
            assert not [c for c in content if any(p in c for p in RAW_PINGS)]
            async with h.rt.db.transaction(readonly=True) as session:
                review = await reviews.get_by_debate(session, debate.id)
            assert review is not None and review.message_ts == request.response["ts"]
            assert has_actions(h.fake.message(REVIEW_CHANNEL, review.message_ts) or {})
            h.assert_all_blocks_valid()


# --------------------------------------------------------------------------------------------
# delivery, signatures, channels


async def test_retried_deliveries_start_nothing_new(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="dialectic.slack")
    async with slack_harness(tmp_path, workers=0) as h:
        root = h.fake.add_message(CHANNEL, "Should we adopt Kafka?", user=USER)
        await h.event({"type": "message", "channel": CHANNEL, "user": USER, "ts": root,
                       "text": "Should we adopt Kafka?"})
        ts = h.fake.add_message(CHANNEL, "<@UBOT0001> debate", user="UBOB", thread_ts=root)
        mention = {"type": "app_mention", "channel": CHANNEL, "user": "UBOB", "ts": ts,
                   "thread_ts": root, "text": "<@UBOT0001> debate"}
        await h.event(mention, event_id="EvMENTION1")
        await h.one_debate()
        retry = await h.event(mention, event_id="EvMENTION1",
                              headers={"X-Slack-Retry-Num": "1",
                                       "X-Slack-Retry-Reason": "http_timeout"})
        assert retry.status == 200  # dropped before any listener ran

        body = h.command_body("Should we adopt Kafka? --mode simple", trigger_id="trig-same")
        await h.send(body, "application/x-www-form-urlencoded")
        await h.wait_until(lambda: len(h.fake.messages(CHANNEL)) >= 4, what="the second root")
        await h.send(body, "application/x-www-form-urlencoded",
                     headers={"X-Slack-Retry-Num": "1"})
        await h.wait_until(lambda: sum("repeated Slack delivery" in r.getMessage()
                                       for r in caplog.records) >= 2, what="both dedupes")

        async def two_debates() -> bool:  # the root is posted before the debate is submitted
            return len(await h.debates()) >= 2

        await h.wait_until(two_debates, what="the command's debate")
        assert len(await h.debates()) == 2


def _forged(body: str, kind: str) -> dict[str, str]:
    if kind == "wrong secret":
        return sign(body, secret="wrong")
    if kind == "stale timestamp":
        return sign(body, timestamp=1_600_000_000)  # the right secret, six years ago
    if kind == "tampered body":
        return sign(body.replace("Should", "Shall"))
    if kind == "timestamp abc":
        return {**sign(body), "X-Slack-Request-Timestamp": "abc"}
    if kind == "non-ASCII signature":
        return {**sign(body), "X-Slack-Signature": "v0=é".encode().decode("latin-1")}
    return {}


@pytest.mark.parametrize("kind", ["wrong secret", "stale timestamp", "tampered body",
                                  "unsigned", "timestamp abc", "non-ASCII signature"])
async def test_a_bad_signature_gets_401(slack: Harness, kind: str) -> None:
    body = slack.command_body("Should we?")
    reply = await slack.send(body, "application/x-www-form-urlencoded",
                             headers=_forged(body, kind), signed=False)
    assert reply.status == 401
    assert await slack.debates() == [] and not slack.fake.calls_to("chat.postMessage")


async def test_not_in_channel_says_how_to_invite_and_queues_nothing(slack: Harness) -> None:
    slack.fake.not_in_channel("CSECRET")
    await slack.command("Should we?", channel="CSECRET")
    call = await slack.fake.wait_for("response_url")
    assert "/invite @Dialectic" in call.args["text"]
    assert await slack.debates() == []


async def test_over_budget_edits_the_root_message_instead_of_queueing(tmp_path: Path) -> None:
    async with FakeOpenAI() as openai, slack_harness(tmp_path, openai=openai,
                                                     daily_budget_usd=0.0) as h:
        await h.command("Should we buy more GPUs?")
        update = await h.fake.wait_for("chat.update")
        assert "Debate not started" in update.args["text"] and "budget" in update.args["text"]
        assert await h.debates() == [] and openai.count() == 0


# --------------------------------------------------------------------------------------------
# threads: evidence and mentions


async def test_a_thread_reply_during_a_debate_becomes_evidence(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:  # no worker: the debate stays queued
        await h.command("Should we cache sessions in Redis?")
        debate = await h.one_debate()
        root = h.fake.messages(CHANNEL)[0]["ts"]
        await h.fake.wait_for("chat.update", lambda c: c.args.get("ts") == root)
        text = "Our p99 latency doubled when Redis failed over <!channel>"
        ts = h.fake.add_message(CHANNEL, text, user="UBOB", thread_ts=root)
        event = {"type": "message", "channel": CHANNEL, "user": "UBOB", "ts": ts,
                 "thread_ts": root, "text": text}
        await h.event(event)
        await h.fake.wait_for("reactions.add")
        assert [r["name"] for r in h.fake.message(CHANNEL, ts)["reactions"]] == ["memo"]
        await h.event(event)  # another replica's delivery (new event id): stored once
        async with h.rt.db.transaction(readonly=True) as session:
            items = await evidence.list_for(session, debate.id)
        assert [(e.author, e.text) for e in items] == [("UBOB", text)]
        assert "evidence_recorded" in await audit_kinds(h, debate.id)


async def test_a_mention_debates_the_thread_it_is_in(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        question = "Should we adopt Kafka for billing events?"
        root = h.fake.add_message(CHANNEL, question, user=USER)
        reply = h.fake.add_message(CHANNEL, "Kafka ops cost us two engineers", user="UBOB",
                                   thread_ts=root)
        for ts, user, text, thread in ((root, USER, question, None),
                                       (reply, "UBOB", "Kafka ops cost us two engineers", root)):
            event = {"type": "message", "channel": CHANNEL, "user": user, "ts": ts, "text": text}
            await h.event({**event, **({"thread_ts": thread} if thread else {})})
        ts = h.fake.add_message(CHANNEL, "<@UBOT0001> debate", user="UCAROL", thread_ts=root)
        await h.event({"type": "app_mention", "channel": CHANNEL, "user": "UCAROL", "ts": ts,
                       "thread_ts": root, "text": "<@UBOT0001> debate"})
        debate = await h.one_debate()
        assert debate.request.topic == question
        assert "Kafka ops cost us two engineers" in debate.request.context
        assert debate.origin.thread_ts == root and debate.origin.channel_id == CHANNEL
        await h.wait_reply(CHANNEL, root, "[Rehearsal] Debate started")
        assert not h.fake.calls_to("conversations.replies")


# --------------------------------------------------------------------------------------------
# appeals, home, modal, usage


def _appeal_payload(h: Harness, ts: str) -> dict[str, Any]:
    return {"type": "message_action", "callback_id": "appeal_decision",
            "trigger_id": h.next_id("trig."), "user": {"id": USER}, "channel": {"id": CHANNEL},
            "response_url": h.fake.response_url(h.next_id("resp")), "message_ts": ts,
            "message": {"type": "message", "user": "UBOB", "ts": ts,
                        "text": "Buy cheap watches at example.com"}}


async def test_the_appeal_shortcut_runs_the_appeal_preset(tmp_path: Path) -> None:
    policy = "Unsolicited advertising is removed."
    async with slack_harness(tmp_path, appeal_policy=policy) as h:
        ts = h.fake.add_message(CHANNEL, "Buy cheap watches at example.com", user="UBOB")
        assert (await h.interaction(_appeal_payload(h, ts))).status == 200
        debate = await h.one_debate()
        assert debate.preset == "appeal" and debate.request.options.policy == policy
        assert "Buy cheap watches" in debate.request.context
        assert debate.origin.thread_ts == ts
        await h.wait_finished(debate.id)
        await h.wait_until(lambda: any("Debate result" in m["text"]
                                       for m in h.fake.replies(CHANNEL, ts)), what="summary")
        h.assert_all_blocks_valid()


async def test_an_appeal_without_a_policy_says_what_to_set(slack: Harness) -> None:
    ts = slack.fake.add_message(CHANNEL, "spam", user="UBOB")
    await slack.interaction(_appeal_payload(slack, ts))
    call = await slack.fake.wait_for("response_url")
    assert "DIALECTIC_APPEAL_POLICY" in call.args["text"]
    assert await slack.debates() == []


async def test_app_home_opened_publishes_the_home_tab(slack: Harness) -> None:
    await slack.event({"type": "app_home_opened", "user": REVIEWER, "channel": "D0HOME",
                       "tab": "home"})
    call = await slack.fake.wait_for("views.publish")
    assert call.ok and call.args["user_id"] == REVIEWER
    assert "Today's budget" in json.dumps(slack.fake.home_views[REVIEWER]["blocks"])


async def test_debate_alone_opens_the_modal_and_its_submission_starts_a_debate(
        slack: Harness) -> None:
    reply = await slack.command("")
    assert reply.status == 200
    opened = await slack.fake.wait_for("views.open")
    view = opened.response["view"]
    assert view["callback_id"] == M.DEBATE_MODAL and view["private_metadata"] == CHANNEL
    values = {
        M.TOPIC_BLOCK: {M.TOPIC_ACTION: {"type": "plain_text_input",
                                         "value": "Should we adopt GraphQL?"}},
        M.MODE_BLOCK: {M.MODE_ACTION: {"type": "static_select",
                                       "selected_option": {"value": "simple"}}},
        M.PRESET_BLOCK: {M.PRESET_ACTION: {"type": "static_select",
                                           "selected_option": {"value": "default"}}},
        M.JUDGES_BLOCK: {M.JUDGES_ACTION: {"type": "static_select",
                                           "selected_option": {"value": "3"}}},
    }
    assert (await slack.submit_view(view, values, user=USER)).status == 200
    debate = await slack.one_debate()
    assert debate.mode == "simple" and debate.request.topic == "Should we adopt GraphQL?"
    await slack.wait_finished(debate.id)
    slack.assert_all_blocks_valid()


async def test_a_modal_for_a_channel_without_the_bot_shows_the_error_in_the_form(
        slack: Harness) -> None:
    slack.fake.not_in_channel("CSECRET")
    view = {"id": "V1", "type": "modal", "callback_id": M.DEBATE_MODAL,
            "private_metadata": "CSECRET"}
    values = {M.TOPIC_BLOCK: {M.TOPIC_ACTION: {"type": "plain_text_input", "value": "Why?"}}}
    reply = await slack.submit_view(view, values, user=USER)
    assert reply.json()["response_action"] == "errors"
    assert "/invite @Dialectic" in reply.json()["errors"][M.TOPIC_BLOCK]
    assert await slack.debates() == []


@pytest.mark.parametrize(("text", "expected"), [
    ("--rounds x Should we?", "--rounds takes a whole number"),
    ("Should we? --mode chaos", "unknown mode"),
    ("Should we? --preset nope", "unknown preset"),
    ('"Should we', "quote is not closed"),
    ("--judges 3", "say what to debate"),
])
async def test_bad_input_gets_an_ephemeral_usage(slack: Harness, text: str,
                                                 expected: str) -> None:
    reply = await slack.command(text)
    body = reply.json()
    assert reply.status == 200 and expected in body["text"]
    assert "Usage" in json.dumps(body["blocks"]) and body.get("response_type") != "in_channel"
    assert await slack.debates() == [] and not slack.fake.calls_to("chat.postMessage")


async def test_help_estimate_budget_and_status(slack: Harness) -> None:
    help_reply = (await slack.command("help")).json()
    assert "/debate status" in json.dumps(help_reply["blocks"])
    estimate = (await slack.command("estimate Should we? --mode simple")).json()
    assert "nothing was started" in json.dumps(estimate["blocks"])
    await slack.command("budget")
    budget = await slack.fake.wait_for("response_url")
    assert "Today's spend" in budget.args["text"]
    await slack.command("Should we adopt Bazel? --mode simple")
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    await slack.command("status")
    listed = await slack.fake.wait_for("response_url",
                                       lambda c: "Debate finished" in c.args.get("text", ""))
    assert debate.id in json.dumps(listed.args["blocks"])
    await slack.command("status nope")
    missing = await slack.fake.wait_for("response_url",
                                        lambda c: "No debate" in c.args.get("text", ""))
    assert "nope" in missing.args["text"]
    slack.assert_all_blocks_valid()


async def test_a_rate_limited_post_is_retried(slack: Harness) -> None:
    slack.fake.rate_limit("chat.postMessage", times=1, retry_after=0)
    await slack.command("Should we adopt Bazel? --mode simple")
    await slack.fake.wait_for("chat.postMessage", lambda c: c.ok)
    assert [c.status for c in slack.fake.calls_to("chat.postMessage")][:2] == [429, 200]
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
