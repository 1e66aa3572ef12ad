"""Ask in a DM, end to end: signed events to the real Bolt app, the real slack_sdk client against
FakeSlack (with its assistant.threads.* methods), debates on the rehearsal model."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.assistant import DmStatus
from bot.slack.views.assistant import PROMPTS_TITLE, suggested_prompts
from bot.slack.views.feedback import FEEDBACK_BLOCK, WHY_BLOCK
from engine.core.presets import BUILTIN_PRESETS
from engine.domain import Event, EventKind
from engine.vocabulary import MAX_TOPIC_CHARS
from storage import evidence
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack
from tests.support.slack_fixtures import Harness, audit_kinds, blocks_text, slack, slack_harness

__all__ = ["slack"]

DM = "D0ALICE1"
ALICE = "UALICE"
QUESTION = "Should we move billing to PostgreSQL?"


def _dm(h: Harness, text: str, *, user: str = ALICE, thread_ts: str | None = None,
        **extra: Any) -> dict[str, Any]:
    """A person's DM as Slack delivers it (the message is in the fake's DM too)."""
    ts = h.fake.add_message(DM, text, user=user, thread_ts=thread_ts)
    event = {"type": "message", "channel": DM, "channel_type": "im", "user": user, "ts": ts,
             "text": text, "event_ts": ts, **extra}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def _texts(h: Harness, thread_ts: str) -> list[str]:
    return [str(m.get("text", "")) for m in h.fake.replies(DM, thread_ts)]


async def test_a_new_assistant_thread_is_offered_the_presets(slack: Harness) -> None:
    root = slack.fake.add_message(DM, "Chats from today", user=ALICE)
    reply = await slack.event({"type": "assistant_thread_started", "event_ts": root,
                               "assistant_thread": {"user_id": ALICE, "channel_id": DM,
                                                    "thread_ts": root,
                                                    "context": {"channel_id": "CGENERAL"}}})
    assert reply.status == 200
    await slack.fake.wait_for("assistant.threads.setSuggestedPrompts")
    offered = slack.fake.prompts[(DM, root)]
    assert offered["title"] == PROMPTS_TITLE
    assert offered["prompts"] == suggested_prompts(BUILTIN_PRESETS)
    assert [p["title"] for p in offered["prompts"]] == ["Decision review", "Any question",
                                                        "Bull vs bear", "Policy check"]
    assert "--preset decision" in offered["prompts"][0]["message"]


async def test_a_dm_question_is_debated_in_its_thread_with_a_status_line(slack: Harness
                                                                          ) -> None:
    event = _dm(slack, QUESTION)
    root = event["ts"]
    await slack.event(event, event_id="EvDM1")
    await slack.event(event, event_id="EvDM1")   # Slack's retry of the same delivery
    debate = await slack.one_debate()
    assert debate.origin.channel_id == DM and debate.origin.thread_ts == root
    assert debate.preset == "default" and debate.request.topic == QUESTION
    await slack.wait_finished(debate.id)
    summary = await slack.wait_reply(DM, root, "[Rehearsal] Debate result")
    await slack.notifier.drain()
    await slack.wait_until(lambda: slack.fake.status(DM, root) == "" and len(
        slack.fake.statuses.get((DM, root), [])) > 3, what="the status to end")

    texts = _texts(slack, root)
    assert texts[0].startswith("[Rehearsal] Debate started")
    assert sum(t.startswith("[Rehearsal] Phase ") for t in texts) == 4
    assert f"/debates/{debate.id}" in blocks_text(summary)
    shown = [s for s in slack.fake.statuses[(DM, root)] if s]
    assert shown[0] == "is preparing the arguments… (rehearsal)"
    assert "is debating: opening (1/4)… (rehearsal)" in shown
    assert "is waiting on the judges: they are scoring… (rehearsal)" in shown
    assert all(s.endswith("(rehearsal)") for s in shown)
    assert slack.fake.statuses[(DM, root)][-1] == ""     # ended with the result
    assert slack.fake.titles[(DM, root)] == QUESTION
    assert all(c.ok for c in slack.fake.calls_to("assistant.threads.setStatus"))
    slack.assert_all_blocks_valid()


async def test_a_preset_named_in_the_dm_is_used(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        event = _dm(h, "<@UBOT0001> Should we split the monolith? --preset decision --judges 3")
        await h.event(event)
        debate = await h.one_debate()
        assert debate.preset == "decision" and debate.request.judges == 3
        assert debate.request.topic == "Should we split the monolith?"
        await h.wait_reply(DM, event["ts"], "[Rehearsal] Debate started")
        await h.fake.wait_for("assistant.threads.setStatus")
        assert h.fake.status(DM, event["ts"]) == "is preparing the arguments… (rehearsal)"


async def test_a_follow_up_in_the_dm_thread_is_evidence(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:  # no worker: the debate stays queued
        question = _dm(h, QUESTION)
        await h.event(question)
        debate = await h.one_debate()
        root = question["ts"]
        await h.fake.wait_for("chat.update", lambda c: c.args.get("channel") == DM)
        text = "Our Postgres failover took 40 minutes last year <!channel>"
        follow_up = _dm(h, text, thread_ts=root)
        await h.event(follow_up)
        await h.fake.wait_for("reactions.add")
        async with h.rt.db.transaction(readonly=True) as session:
            items = await evidence.list_for(session, debate.id)
        assert [(e.author, e.text) for e in items] == [(ALICE, text)]
        assert "evidence_recorded" in await audit_kinds(h, debate.id)
        assert len(await h.debates()) == 1                   # not a second question
        assert not any("<!channel>" in c for c in h.posted_content())


async def test_a_reply_after_the_debate_ended_says_so_and_starts_nothing(slack: Harness
                                                                          ) -> None:
    question = _dm(slack, QUESTION)
    await slack.event(question)
    debate = await slack.one_debate()
    await slack.wait_finished(debate.id)
    await slack.notifier.drain()
    await slack.event(_dm(slack, "And what about MySQL?", thread_ts=question["ts"]))
    await slack.wait_reply(DM, question["ts"], "This debate has ended")
    assert len(await slack.debates()) == 1


async def test_bad_input_gets_one_reply_and_starts_nothing(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        cases = {
            "   ": "Say what to debate.",
            "Should we? --preset nonesuch": "unknown preset 'nonesuch'",
            "x" * (MAX_TOPIC_CHARS + 1): "the limit is",
            "Should we? --rounds 99": "--rounds must be between",
            "status": "works with /debate, not in a DM",
        }
        for text, why in cases.items():
            event = _dm(h, text)
            await h.event(event)
            reply = await h.wait_until(lambda ts=event["ts"]: h.fake.replies(DM, ts),
                                       what=f"the reply to {text[:20]!r}")
            assert len(reply) == 1 and why in reply[0]["text"], (text, reply)
        assert await h.debates() == []
        assert not h.fake.calls_to("assistant.threads.setStatus")
        assert not h.fake.calls_to("assistant.threads.setTitle")


async def test_messages_from_bots_and_the_app_itself_are_ignored(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        await h.event(_dm(h, QUESTION, user="UOTHERBOT", bot_id="B0OTHER"))
        await h.event(_dm(h, QUESTION, user=h.fake.bot_user_id))
        await h.event(_dm(h, QUESTION, subtype="bot_message", bot_id="B0FAKE"))
        await h.event({"type": "message", "subtype": "message_changed", "channel": DM,
                       "channel_type": "im", "hidden": True, "ts": "1.2",
                       "message": {"type": "message", "subtype": "assistant_app_thread",
                                   "user": ALICE, "text": "Chats", "ts": "1.1"}})
        probe = _dm(h, "help")   # a person's message afterwards is answered: the rest were read
        await h.event(probe)
        await h.wait_reply(DM, probe["ts"], "Send me a question")
        assert await h.debates() == []
        assert [c.args.get("thread_ts") for c in h.fake.calls_to("chat.postMessage")] == [
            probe["ts"]]


async def test_a_dm_over_socket_mode_is_debated_like_one_over_http(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0, slack_app_token="xapp-test") as h:
        await h.wait_until(lambda: h.fake.socket_mode.greeted, what="the socket to connect")
        event = _dm(h, "Should we move billing to PostgreSQL? --preset decision")
        ack = await h.fake.socket_mode.deliver(h.event_body(event))
        assert ack.get("envelope_id")
        debate = await h.one_debate()
        assert debate.preset == "decision" and debate.origin.thread_ts == event["ts"]
        await h.wait_reply(DM, event["ts"], "[Rehearsal] Debate started")
        await h.fake.wait_for("assistant.threads.setTitle")
        assert h.fake.titles[(DM, event["ts"])] == "Should we move billing to PostgreSQL?"


def _dm_status(h: Harness) -> DmStatus:
    """The process's DM status keeper (a finished hook the Slack wiring registered)."""
    found = [getattr(hook, "__self__", None) for hook in h.rt.service.finished_hooks]
    (keeper,) = [k for k in found if isinstance(k, DmStatus)]
    return keeper


async def _status_ended(h: Harness) -> list[str]:
    """Every status the app set, once the last one cleared it (the finished hook's)."""
    def ended() -> list[str] | None:
        sent = [str(c.args["status"]) for c in h.fake.calls_to("assistant.threads.setStatus")]
        return sent if sent and sent[-1] == "" and not _dm_status(h).live else None

    return await h.wait_until(ended, what="the status to be cleared at the end")


async def test_a_dm_debate_streams_its_plan_with_the_status_line_beside_it(
        tmp_path: Path) -> None:
    """In a DM the plan streams without recipient fields; chat.startStream sends a message,
    which clears the status (as Slack documents), so the status is set again and stays while
    the plan streams (its appends send no message); the stream ends with the result and its
    feedback buttons, and the status is cleared."""
    async with FakeOpenAI(latency=0.3) as openai, \
            slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
        event = _dm(h, QUESTION)
        root = event["ts"]
        await h.event(event)
        debate = await h.one_debate()
        await h.wait_until(lambda: h.fake.streams_in(DM, root), what="the plan to start")
        # the opening's calls take a while: the status shows it beside the plan meanwhile
        await h.wait_until(lambda: h.fake.status(DM, root) == "is debating: opening (1/4)…",
                           what="the status line beside the plan")
        record = await h.wait_finished(debate.id)
        await h.wait_until(lambda: all(s.stopped for s in h.fake.streams_in(DM, root)),
                           what="the plan to end")
        await h.notifier.drain()
        await _status_ended(h)

        (stream,) = h.fake.streams_in(DM, root)
        summary = h.notifier.summary_message(record)
        assert summary is not None and stream.blocks == summary.blocks
        assert [b.get("block_id") for b in stream.blocks][-2:] == [FEEDBACK_BLOCK, WHY_BLOCK]
        assert all(t["status"] == "complete" for t in stream.tasks().values())
        texts = _texts(h, root)
        assert texts[0].startswith("Debate started") and "The result is below" in texts[1]
        assert not any(t.startswith(("Phase ", "Debate result")) for t in texts)
        shown = [s for s in h.fake.statuses[(DM, root)] if s]
        assert "is waiting on the judges: they are scoring…" in shown
        assert h.fake.status(DM, root) == ""
        h.assert_all_blocks_valid()


async def test_the_status_is_set_again_when_the_plans_first_message_clears_it(
        tmp_path: Path) -> None:
    """The status shows before the plan starts; chat.startStream sends the plan's message, which
    clears it: it is set again at once, not only at the next change of phase. The service's two
    sinks are driven by hand (no worker), in the order that needs it."""
    async with slack_harness(tmp_path, workers=0, slack_streaming="auto") as h:
        event = _dm(h, QUESTION)
        root = event["ts"]
        await h.event(event)
        record = await h.one_debate()
        dm = _dm_status(h)
        plan, status = h.notifier.sink_for(record), dm.sink_for(record)
        assert plan is not None and status is not None
        started = Event(kind=EventKind.DEBATE_STARTED, debate_id=record.id,
                        data={"topic": QUESTION, "mode": "consensus"})
        opening = Event(kind=EventKind.PHASE_STARTED, debate_id=record.id,
                        data={"phase": "opening"})
        line = "is debating: opening (1/4)… (rehearsal)"
        for sink_event in (started, opening):
            await status.emit(sink_event)
        await h.wait_until(lambda: h.fake.status(DM, root) == line, what="the status")
        for sink_event in (started, opening):
            await plan.emit(sink_event)
        await h.wait_until(lambda: h.fake.streams_in(DM, root), what="the plan to start")
        await h.wait_until(lambda: h.fake.status(DM, root) == line, what="the status again")
        assert h.fake.statuses[(DM, root)][-2:] == ["", line]   # cleared, then set again
        await dm.on_finished(record, None)
        assert dm.live == {}
        await h.owe(await h.rt.service.get(record.id))   # its thread's delivery clears it
        await h.delivered()
        assert h.fake.status(DM, root) == ""


async def test_the_fake_refuses_no_dm_stream_without_recipients() -> None:
    async with FakeSlack() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        root = fake.add_message(DM, QUESTION, user=ALICE)
        await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root,
                                                 status="is thinking…")
        started = await client.chat_startStream(channel=DM, thread_ts=root)
        assert started["ok"] and fake.status(DM, root) == ""   # the app sent a message
        await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root,
                                                 status="is thinking…")
        await client.chat_appendStream(channel=DM, ts=started["ts"], markdown_text="more")
        await client.chat_stopStream(channel=DM, ts=started["ts"])
        assert fake.status(DM, root) == "is thinking…"   # appends and the stop send none
        fake.status_ttl = 0.0   # Slack's two minutes, shortened: no message since, it is gone
        assert fake.status(DM, root) == ""


async def test_the_dm_status_is_kept_alive_while_a_phase_runs_and_stops_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slack removes a status two minutes after the last message: the status is re-sent every
    DIALECTIC_SLACK_STATUS_REFRESH seconds (shortened here) while the debate runs, and no more
    once it has finished."""
    monkeypatch.setenv("DIALECTIC_SLACK_STATUS_REFRESH", "0.05")
    async with FakeOpenAI(latency=0.3) as openai, \
            slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
        event = _dm(h, QUESTION)
        root = event["ts"]
        await h.event(event)
        debate = await h.one_debate()
        await h.wait_finished(debate.id)
        await h.notifier.drain()
        sent = await _status_ended(h)
        again = [a for a, b in itertools.pairwise(sent) if a == b and a]
        assert len(again) >= 3, sent                 # the same status, re-sent while it held
        settled = len(sent)
        for _ in range(5):   # several refresh intervals: nothing more is sent
            await asyncio.sleep(0.05)
        assert len(h.fake.calls_to("assistant.threads.setStatus")) == settled
        assert h.fake.status(DM, root) == ""
