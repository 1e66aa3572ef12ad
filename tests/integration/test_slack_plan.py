"""The debate streamed as a plan in its thread: signed /debate requests to the real Bolt app, the
real slack_sdk client streaming into FakeSlack (chat.startStream / appendStream / stopStream),
debates on FakeOpenAI or the rehearsal model; and the fall back to the status message."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.progress import phases_of
from bot.slack.limits import TIERS, paced_limits
from bot.slack.streaming import LOST_AFTER, RETRY_STREAMING
from bot.slack.views.common import usd
from bot.slack.views.plan import CONTINUED, task_id
from engine.core.planning import prepare
from engine.domain import DebateRequest
from engine.settings import EngineSettings
from engine.vocabulary import Mode
from storage import slack as slack_store
from storage.records import DebateRecord
from tests.fakes.openai_server import FakeOpenAI, last_text
from tests.fakes.slack_server import FakeSlack
from tests.fakes.slack_streams import Stream
from tests.support.plan_rendering import readme_block, shape
from tests.support.plan_rendering import record as record_rendering
from tests.support.slack_fixtures import CHANNEL, TEAM, USER, Harness, slack_harness

ORDER = ["pending", "in_progress", "complete"]
RAW_PINGS = ("<!channel>", "<!here>", "<!everyone>")
HOSTILE_OPENING = {
    "summary": "Everyone must see this <!channel> right now & <!here>",
    "claims": [{"claim": "<!channel> Postgres wins", "evidence": "trust me <!everyone>"}],
}


def _pro_opening(body: dict[str, Any]) -> bool:
    system, user = last_text(body, "system"), last_text(body, "user")
    return "arguing FOR the proposition" in system and "Task: Give your opening" in user


def _con(body: dict[str, Any]) -> bool:
    return "arguing AGAINST the proposition" in last_text(body, "system")


async def _debate(h: Harness, text: str) -> tuple[DebateRecord, Stream]:
    """Start a debate with /debate, wait for its end, and return it with its one stream."""
    await h.command(text)
    found = await h.wait_until(h.debates, what="a debate")
    record = await h.wait_finished(found[0].id)
    root = h.fake.messages(CHANNEL)[0]
    await h.wait_until(lambda: any(s.stopped for s in h.fake.streams_in(CHANNEL, root["ts"])),
                       what="the stream to stop")
    await h.notifier.drain()
    streams = h.fake.streams_in(CHANNEL, root["ts"])
    assert len(streams) == 1, streams
    return await h.rt.service.get(record.id), streams[0]


def _planned(h: Harness, record: DebateRecord) -> list[str]:
    return phases_of(prepare(h.rt.engine, record.request).plan)


def _in_order(history: list[str]) -> bool:
    """pending -> in_progress -> complete, possibly starting later (coalesced updates)."""
    ranks = [ORDER.index(s) for s in history]
    return ranks == sorted(ranks) and len(set(ranks)) == len(ranks) and history[-1] == "complete"


async def test_a_channel_debate_streams_as_one_plan(tmp_path: Path) -> None:
    async with FakeOpenAI(latency=0.05) as openai:
        openai.script(_pro_opening, HOSTILE_OPENING)
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            record, stream = await _debate(h, "Should we move billing to PostgreSQL?")
            start = stream.start_args
            assert (start["recipient_team_id"], start["recipient_user_id"]) == (TEAM, USER)
            assert start["task_display_mode"] == "plan"

            phases = _planned(h, record)
            assert list(stream.tasks()) == [task_id(p) for p in phases]
            for phase in phases:
                assert _in_order(stream.history(task_id(phase))), (phase, stream.chunks)
            assert stream.history(task_id(phases[-1]))[0] == "pending"   # shown before it ran
            assert stream.appends >= 1   # the plan moved in place, not in new messages

            tasks = stream.tasks()
            opening = tasks[task_id("opening")]["output"]
            assert "&lt;!channel&gt;" in opening and opening.startswith("For: ")
            everything = json.dumps(stream.chunks) + json.dumps(stream.blocks)
            assert not any(p in everything for p in RAW_PINGS)

            assert record.result is not None and record.result.consensus is not None
            judges = tasks[task_id("judging")]
            for judge in record.result.consensus.judges:
                assert judge in judges["output"]
            n = len(record.result.consensus.judges)
            assert judges["details"] == f"{n} of {n} judge(s) scored"

            titles = stream.titles()
            assert any(t.endswith("so far") and "$" in t for t in titles[:-1])
            assert titles[-1].endswith(f"cost {usd(record.cost_usd)}")
            assert "Debate" in titles[-1] and "so far" not in titles[-1]

            summary = h.notifier.summary_message(record)
            assert summary is not None and stream.stopped and stream.blocks == summary.blocks
            thread = h.fake.replies(CHANNEL, stream.thread_ts)
            assert [m["ts"] for m in thread] == [stream.ts]   # no status message, no replies
            assert not h.fake.calls_to("chat.update") or all(
                c.args.get("ts") != stream.ts for c in h.fake.calls_to("chat.update"))
            stored = await h.rt.service.get(record.id)
            assert stored.origin.stream_ts == stream.ts and stored.origin.status_ts is None
            assert h.fake.invalid_blocks == []


async def test_a_channel_debate_over_socket_mode_streams_as_one_plan(tmp_path: Path) -> None:
    """The app connected over Socket Mode (no HTTP request from Slack): /debate arrives as a
    `slash_commands` envelope, and the debate streams as a plan with its recipients."""
    async with slack_harness(tmp_path, slack_streaming="auto", slack_app_token="xapp-test") as h:
        await h.wait_until(lambda: h.fake.socket_mode.greeted, what="the socket to connect")
        fields = dict(parse_qsl(h.command_body("Should we move billing to PostgreSQL?")))
        ack = await h.fake.socket_mode.deliver(fields, kind="slash_commands")
        assert ack.get("envelope_id")
        record = await h.wait_finished((await h.one_debate()).id)
        root = h.fake.messages(CHANNEL)[0]
        await h.wait_until(lambda: any(s.stopped for s in h.fake.streams_in(CHANNEL,
                                                                            root["ts"])),
                           what="the stream to stop")
        await h.notifier.drain()
        (stream,) = h.fake.streams_in(CHANNEL, root["ts"])
        start = stream.start_args
        assert (start["recipient_team_id"], start["recipient_user_id"]) == (TEAM, USER)
        assert list(stream.tasks()) == [task_id(p) for p in _planned(h, record)]
        assert all(t["status"] == "complete" for t in stream.tasks().values())
        summary = h.notifier.summary_message(record)
        assert summary is not None and stream.blocks == summary.blocks
        assert [m["ts"] for m in h.fake.replies(CHANNEL, root["ts"])] == [stream.ts]
        h.assert_all_blocks_valid()


async def test_another_mode_streams_its_own_phases(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, slack_streaming="auto") as h:
        record, stream = await _debate(h, "Should we adopt Kafka? --mode critique")
        assert record.mode == "critique"
        phases = _planned(h, record)
        assert "proposal" in phases and "opening" not in phases
        assert list(stream.tasks()) == [task_id(p) for p in phases]
        assert all(t["status"] == "complete" for t in stream.tasks().values())
        assert stream.titles()[-1].startswith("[Rehearsal]")          # labelled throughout
        assert "Rehearsal" in stream.text() and "Rehearsal" in json.dumps(stream.blocks)


async def test_a_refused_step_is_an_error_that_says_why(tmp_path: Path) -> None:
    words = "I'm sorry, but I can't help with arguing that position."
    async with FakeOpenAI() as openai:
        openai.refuse(_con, text=words, times=None)
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            record, stream = await _debate(h, "Should we move billing to PostgreSQL?")
            opening = stream.tasks()[task_id("opening")]
            assert opening["status"] == "error"
            assert "refused by the model" in opening["details"] and "/con" in opening["details"]
            assert opening["output"].startswith("For: ")   # the side that spoke still shows
            assert record.result is not None and not record.result.complete
            assert "(incomplete)" in stream.titles()[-1]     # never shown as complete
            assert "Incomplete" in json.dumps(stream.blocks)


async def test_without_streaming_the_thread_falls_back_once_per_workspace(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="dialectic.slack")
    async with slack_harness(tmp_path, slack_streaming="auto") as h:
        h.fake.streaming_unavailable("unknown_method")
        first = await _fallback_debate(h, "Should we adopt Kafka?")
        assert len(h.fake.calls_to("chat.startStream")) == 1
        second = await _fallback_debate(h, "Should we adopt Pulsar?")
        assert len(h.fake.calls_to("chat.startStream")) == 1   # remembered for the workspace
        assert first.id != second.id
        said = [r for r in caplog.records if "streaming is unavailable" in r.getMessage()]
        assert len(said) == 1 and TEAM in said[0].getMessage()
        assert not h.fake.streams


async def _fallback_debate(h: Harness, topic: str, **fields: Any) -> DebateRecord:
    before = {m["ts"] for m in h.fake.messages(CHANNEL)}
    await h.command(topic, **fields)
    root = await h.wait_until(lambda: next((m for m in h.fake.messages(CHANNEL)
                                            if m["ts"] not in before and "Debate started"
                                            in m["text"]), None), what="the root")
    record = await h.wait_until(lambda: _by_topic(h, topic), what="the debate")
    record = await h.wait_finished(record.id)
    await h.wait_reply(CHANNEL, root["ts"], "[Rehearsal] Debate result")
    await h.notifier.drain()
    texts = [m["text"] for m in h.fake.replies(CHANNEL, root["ts"])]
    assert texts[0].startswith("[Rehearsal] Debate finished")          # the status message
    assert sum(t.startswith("[Rehearsal] Phase ") for t in texts) == len(_planned(h, record))
    stored = await h.rt.service.get(record.id)
    assert stored.origin.status_ts and stored.origin.stream_ts is None
    return stored


async def test_a_workspace_without_streaming_is_remembered_across_restarts_for_a_day(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, slack_streaming="auto") as h:
        h.fake.streaming_unavailable("not_allowed")
        await _fallback_debate(h, "Should we adopt Kafka?")
        assert len(h.fake.calls_to("chat.startStream")) == 1
    async with slack_harness(tmp_path, slack_streaming="auto") as h:   # a restart, same database
        # (each harness counts its trigger ids from 1: a new one, or it is Slack's retry)
        await _fallback_debate(h, "Should we adopt Pulsar?", trigger_id="trigger.second")
        assert not h.fake.calls_to("chat.startStream")   # not asked again within the day
        async with h.rt.db.transaction() as session:
            known = await slack_store.streaming_refusal(session, TEAM)
            assert known is not None and known.error == "not_allowed"
            # as if it was learnt more than a day ago
            await slack_store.refuse_streaming(session, team_id=TEAM, error=known.error,
                                               now=known.at - RETRY_STREAMING - timedelta(1))
    async with slack_harness(tmp_path, slack_streaming="auto") as h:   # a day later
        topic = "Should we adopt NATS?"
        await h.command(topic, trigger_id="trigger.third")
        record = await h.wait_until(lambda: _by_topic(h, topic), what="the debate")
        await h.wait_finished(record.id)
        await h.wait_until(lambda: any(s.stopped for s in h.fake.streams.values()),
                           what="the stream to stop")
        await h.notifier.drain()
        assert [c.ok for c in h.fake.calls_to("chat.startStream")] == [True]   # tried again
        async with h.rt.db.transaction(readonly=True) as session:
            assert await slack_store.streaming_refusal(session, TEAM) is None   # and forgotten


async def _by_topic(h: Harness, topic: str) -> DebateRecord | None:
    return next((d for d in await h.debates() if d.request.topic == topic), None)


async def test_streaming_off_keeps_the_status_message(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, slack_streaming="off") as h:
        await _fallback_debate(h, "Should we adopt Kafka?")
        assert not h.fake.calls_to("chat.startStream")


@pytest.mark.parametrize("method", ["chat.startStream", "chat.stopStream"])
async def test_no_stream_is_started_when_its_tier_2_budget_is_spent(tmp_path: Path,
                                                                     method: str) -> None:
    """A stream costs a chat.startStream and a chat.stopStream (Tier 2): when either has spent
    its minute in the workspace, the debate is not streamed but gets what streaming off gives
    (status message, phase replies, the result as a message), and the next one streams again."""
    async with slack_harness(tmp_path, slack_streaming="auto") as h:
        limits = paced_limits(h.notifier.client)
        assert limits is not None
        token = h.notifier.client.token or ""
        for _ in range(TIERS[method]):   # the minute's calls, as other debates spent them
            await limits.acquire(token, method)
        await _fallback_debate(h, "Should we adopt Kafka?")
        assert not h.fake.calls_to("chat.startStream") and not h.fake.streams
        limits.window = 0.0   # the minute has passed
        topic = "Should we adopt Pulsar?"
        await h.command(topic)
        record = await h.wait_until(lambda: _by_topic(h, topic), what="the debate")
        await h.wait_finished(record.id)
        await h.wait_until(lambda: any(s.stopped for s in h.fake.streams.values()),
                           what="the stream to stop")
        assert [c.ok for c in h.fake.calls_to("chat.startStream")] == [True]


def test_a_request_plans_the_phases_the_stream_shows() -> None:
    """The tasks come from the engine's plan, so every mode has its own (no list per mode)."""
    engine = EngineSettings(rehearsal=True)
    for mode in Mode:
        phases = phases_of(prepare(engine, DebateRequest(topic="T?", mode=mode)).plan)
        assert phases and len({task_id(p) for p in phases}) == len(phases), mode


async def test_the_slack_guide_shows_the_plan_as_it_is_rendered(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "slack.md").read_text()
    assert shape(readme_block(guide)) == shape(await record_rendering(tmp_path)), (
        "docs/slack.md's plan rendering is stale: python -m tests.support.plan_rendering")


async def test_a_429_on_append_is_retried_after_retry_after(tmp_path: Path) -> None:
    async with FakeOpenAI(latency=0.05) as openai:
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            h.fake.rate_limit("chat.appendStream", times=1, retry_after=1)
            record, stream = await _debate(h, "Should we move billing to PostgreSQL?")
            statuses = [c.status for c in h.fake.calls_to("chat.appendStream")]
            assert statuses[0] == 429 and 200 in statuses[1:]
            assert all(t["status"] == "complete" for t in stream.tasks().values())
            assert stream.titles()[-1].endswith(f"cost {usd(record.cost_usd)}")


#: a call's latency long enough that the stream is lost (three appends refused, paced) while the
#: debate still runs: a debate that finishes first ends its stream with the summary instead
#: (the sink is closed, and its delivery stops the stream), which is not the case under test
MIDWAY_LATENCY = 0.3


async def _lost_midway(h: Harness) -> tuple[DebateRecord, list[str], Stream]:
    """A debate whose stream is lost midway: the thread's texts once it is over."""
    await h.command("Should we move billing to PostgreSQL?")
    found = await h.wait_until(h.debates, what="a debate")
    record = await h.wait_finished(found[0].id)
    root = h.fake.messages(CHANNEL)[0]
    summary = await h.wait_reply(CHANNEL, root["ts"], "Debate result")
    await h.notifier.drain()
    thread = h.fake.replies(CHANNEL, root["ts"])
    texts = [m["text"] for m in thread]
    phases = _planned(h, record)
    n = len(phases)
    status = next(t for t in texts if t.startswith("Debate ") and f"{n}/{n}" in t)
    assert texts.index(status) < texts.index(summary["text"])
    assert sum(t.startswith("Phase ") for t in texts) == len(phases)  # none lost
    assert len(h.fake.calls_to("chat.startStream")) == 1
    (stream,) = h.fake.streams_in(CHANNEL, root["ts"])
    assert [m["ts"] for m in thread].index(stream.ts) < texts.index(status)  # above it
    assert not h.notifier.streaming.unavailable   # this stream, not the workspace
    return record, texts, stream


async def test_a_stream_lost_midway_is_stopped_with_a_line_pointing_below(
        tmp_path: Path) -> None:
    async with FakeOpenAI(latency=MIDWAY_LATENCY) as openai:
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            h.fake.fail("chat.appendStream", "internal_error", times=LOST_AFTER)
            _, _, stream = await _lost_midway(h)
            assert stream.stopped and stream.text().endswith(CONTINUED)
            assert [c.ok for c in h.fake.calls_to("chat.stopStream")] == [True]
            assert not any(t["status"] == "complete" and t["id"] == task_id("judging")
                           for t in stream.tasks().values())   # it stopped midway
            h.assert_all_blocks_valid()


async def test_a_stream_slack_no_longer_takes_is_left_and_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="dialectic.slack")
    async with FakeOpenAI(latency=MIDWAY_LATENCY) as openai:
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            h.fake.fail("chat.appendStream", "message_not_in_streaming_state")
            h.fake.fail("chat.stopStream", "message_not_in_streaming_state")
            _, _, stream = await _lost_midway(h)
            assert [c.ok for c in h.fake.calls_to("chat.stopStream")] == [False]
            assert not stream.stopped and CONTINUED not in stream.text()
            said = [r.getMessage() for r in caplog.records]
            assert any("could not be stopped" in m and "stays above the status message" in m
                       for m in said), said
            h.assert_all_blocks_valid()


async def test_a_failed_debate_ends_its_plan_with_errors_not_pending(tmp_path: Path) -> None:
    async with FakeOpenAI() as openai:
        openai.fail(lambda body: True, 401, times=None)
        async with slack_harness(tmp_path, openai=openai, slack_streaming="auto") as h:
            record, stream = await _debate(h, "Should we move billing to PostgreSQL?")
            assert record.status.value == "failed"
            statuses = {t["status"] for t in stream.tasks().values()}
            assert statuses == {"error"}, stream.tasks()
            assert "Debate failed" in stream.titles()[-1]
            assert "without a result" in stream.text() or "Incomplete" in json.dumps(
                stream.blocks)


async def test_the_fake_refuses_what_slack_refuses_in_a_stream() -> None:
    async with FakeSlack() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        root = fake.add_message(CHANNEL, "Should we?")

        async def code(call: Any) -> str:
            try:
                await call
            except SlackApiError as exc:
                return str(exc.response["error"])
            return "ok"

        assert await code(client.chat_startStream(channel=CHANNEL, thread_ts=root)) == \
            "invalid_arguments"                                   # a channel needs recipients
        dm = await client.chat_startStream(channel="D0DM", thread_ts=root)  # a DM does not
        ts = (await client.chat_startStream(channel=CHANNEL, thread_ts=root,
                                            recipient_team_id=TEAM,
                                            recipient_user_id=USER))["ts"]
        assert await code(client.chat_appendStream(channel=CHANNEL, ts=ts,
                                                   markdown_text="x" * 12_001)) == "msg_too_long"
        assert await code(client.chat_appendStream(
            channel=CHANNEL, ts=ts, chunks=[{"type": "poll", "text": "?"}])) == "invalid_chunks"
        assert await code(client.chat_appendStream(channel=CHANNEL, ts=ts, chunks=[
            {"type": "task_update", "id": "a", "title": "A", "status": "done"}])) == \
            "invalid_chunks"
        assert await code(client.chat_appendStream(channel=CHANNEL, ts=ts, chunks=[
            {"type": "task_update", "id": "a", "title": "A", "status": "complete",
             "output": "x" * 257}])) == "invalid_chunks"
        await client.chat_stopStream(channel=CHANNEL, ts=ts, markdown_text="done")
        assert await code(client.chat_appendStream(channel=CHANNEL, ts=ts,
                                                   markdown_text="more")) == \
            "message_not_in_streaming_state"
        assert fake.streams[ts].text() == "done" and dm["ok"]
        fake.streaming_unavailable("not_allowed")
        assert await code(client.chat_startStream(channel="D0DM", thread_ts=root)) == \
            "not_allowed"
