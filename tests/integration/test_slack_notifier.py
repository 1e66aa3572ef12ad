"""The notifier around the engine: Slack failing never fails a debate; debates submitted with
only a channel (the API, the scheduler) get a thread of their own."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from aiohttp import web

from bot.assembly import assembled
from bot.service.housekeeping import housekeeping, purge_once
from bot.settings import Settings
from bot.slack.housekeeping import MESSAGE_TTL, forget_messages
from bot.slack.notifier import SlackNotifier, Thread
from bot.slack.wiring import attach_slack
from engine.domain import DebateRequest, DebateResult, Event, EventKind, utcnow
from engine.settings import PresetSpec, ThresholdSpec
from storage import caches, debates, dedupe, heartbeats, queue, reviews, starts
from storage import slack as slack_store
from storage.records import DebateRecord, DebateStatus, Origin
from tests.support.slack_fixtures import CHANNEL, REVIEW_CHANNEL, slack_harness


async def test_a_debate_finishes_when_every_slack_call_fails(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        await h.command("Should we adopt Bazel? --mode simple")
        debate = await h.one_debate()
        root = h.fake.messages(CHANNEL)[0]["ts"]
        await h.fake.wait_for("chat.update", lambda c: c.args.get("ts") == root)
        for method in ("chat.postMessage", "chat.update", "chat.getPermalink"):
            h.fake.fail(method, "internal_error", times=1000)
        async with h.rt.db.transaction() as session:
            record = await queue.claim(session, worker_id="test", lease_seconds=30, now=utcnow())
        assert record is not None and record.id == debate.id
        done = await h.rt.service.execute(record, worker_id="test")
        assert done.status is DebateStatus.COMPLETED
        notifier: SlackNotifier = h.notifier
        await notifier.drain()
        sink = notifier.sink_for(done)
        assert sink is not None
        await sink.emit(Event(kind=EventKind.PHASE_FINISHED, debate_id=done.id,
                              data={"phase": "x", "highlights": "not a mapping"}))


async def test_a_scheduled_debate_posts_no_thread_but_its_review_request(
        tmp_path: Path) -> None:
    """The scheduler posts one digest for its debates: no thread per debate; a routed result
    still reaches the reviewers."""
    strict = {"strict": PresetSpec(name="strict", thresholds=ThresholdSpec(
        high=1.0, tentative=1.0, escalate=0.0))}
    async with slack_harness(tmp_path, presets=strict) as h:
        sub = await h.rt.service.submit(
            DebateRequest(topic="Is the weekly signal a buy?", preset="strict"),
            origin=Origin(surface="schedule", schedule_id="morning", channel_id=CHANNEL))
        h.rt.notify_workers()
        done = await h.wait_finished(sub.record.id)
        assert done.status is DebateStatus.AWAITING_REVIEW
        await h.fake.wait_for("chat.postMessage",
                              lambda c: c.args.get("channel") == REVIEW_CHANNEL)
        await h.notifier.drain()
        assert h.fake.messages(CHANNEL) == []
        h.assert_all_blocks_valid()


async def test_debates_from_elsewhere_post_nothing(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        sub = await h.rt.service.submit(DebateRequest(topic="Quiet?", mode="simple"),
                                        origin=Origin(surface="api"))
        h.rt.notify_workers()
        await h.wait_finished(sub.record.id)
        assert h.notifier.sink_for(sub.record) is None
        assert not h.fake.calls_to("chat.postMessage")


async def test_a_clear_appeal_says_it_was_resolved_automatically(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        result = DebateResult(id="d1", status="completed", mode="consensus",
                              topic="Should the moderation decision be overturned?",
                              preset="appeal", verdict="The decision stands <!channel>",
                              winner="con", routing="auto_approve")
        record = DebateRecord(id="d1", request=DebateRequest(topic=result.topic, preset="appeal"),
                              mode="consensus", preset="appeal", status=DebateStatus.COMPLETED,
                              result=result)
        notifier: SlackNotifier = h.notifier
        await notifier.post_summary(record, Thread(CHANNEL, "1700000000.000001"))
        await notifier.post_summary(record.model_copy(update={"preset": "default"}),
                                    Thread(CHANNEL, "1700000000.000001"))
        first, second = (c.args for c in h.fake.calls_to("chat.postMessage"))
        assert first["text"].startswith("Resolved automatically:")
        assert "Resolved automatically" in json.dumps(first["blocks"])
        assert "&lt;!channel&gt;" in first["text"] and "<!channel>" not in json.dumps(first)
        assert not second["text"].startswith("Resolved")
        h.assert_all_blocks_valid()


async def test_housekeeping_forgets_old_messages_dedupe_keys_and_judge_cache(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        old = utcnow() - MESSAGE_TTL - timedelta(days=1)
        async with h.rt.db.transaction() as session:
            await slack_store.remember_message(session, slack_store.SeenMessage(
                CHANNEL, "1.1", None, "U1", "old"), now=old)
            await dedupe.first_time(session, source="event", key="Ev1", now=old)
            await dedupe.first_time(session, source="event", key="Ev2")
            await heartbeats.beat(session, owner="gone:1", now=old)
            await heartbeats.beat(session, owner="here:2", now=utcnow())
            await caches.judge_cache_put(session, "judge:old", {"x": 1}, utcnow())
            await caches.judge_cache_put(session, "judge:new", {"x": 2},
                                         utcnow() + timedelta(hours=1))
            for key in ("slack:ended", "slack:unfinished"):   # an unfinished start is kept
                await starts.intend(session, key=key, place={}, request={}, owner="gone:1",
                                    now=old, lease_seconds=10)
            await starts.ended(session, "slack:ended", status=starts.DONE, now=old)
        assert await forget_messages(h.rt) == {"Slack messages": 1}
        assert await purge_once(h.rt) == {"judge cache entries": 1, "dedupe keys": 1,
                                         "heartbeats": 1, "Slack starts": 1}
        async with housekeeping(h.rt, forget_messages, every=3600):   # runs once at start
            await asyncio.sleep(0.1)
        assert await purge_once(h.rt) == {"judge cache entries": 0, "dedupe keys": 0,
                                         "heartbeats": 0, "Slack starts": 0}


async def test_socket_mode_is_used_when_an_app_token_is_set(tmp_path: Path) -> None:
    settings = Settings(rehearsal=True, database_url=f"sqlite+aiosqlite:///{tmp_path}/s.db",
                        slack_bot_token="xoxb-test", slack_app_token="xapp-test",
                        slack_signing_secret=None)
    async with assembled(settings) as parts:
        app = web.Application()
        assert parts.notifier is not None
        bolt = attach_slack(parts.rt, settings.slack, parts.notifier, parts.scheduler, app)
        assert bolt is not None
        assert not [r for r in app.router.routes() if r.resource and r.resource.canonical
                    == "/slack/events"]
        assert len(app.cleanup_ctx) == 1  # socket mode
        notifier = parts.notifier
        assert parts.rt.service.finished_hooks.count(notifier.on_finished) == 1
        assert parts.rt.service.sink_factories.count(notifier.sink_for) == 1


async def test_a_spot_check_is_requested_but_the_thread_keeps_the_published_result(
        tmp_path: Path) -> None:
    """A spot-checked result was published: its thread gets the summary and no "awaits a
    reviewer" notice; the review channel gets a request marked as a spot check."""
    async with slack_harness(tmp_path, workers=0) as h:
        result = DebateResult(id="d1", status="completed", mode="consensus",
                              topic="Adopt PostgreSQL?", preset="decision", verdict="Adopt it",
                              winner="pro", routing="auto_approve")
        record = DebateRecord(id="d1", request=DebateRequest(topic=result.topic),
                              mode="consensus", preset="decision",
                              status=DebateStatus.COMPLETED, result=result,
                              origin=Origin(surface="slack", channel_id=CHANNEL,
                                            thread_ts="1700000000.000001"))
        async with h.rt.db.transaction() as session:
            await debates.create(session, record=record, topic_key="d1")
            review = await reviews.create(session, debate_id="d1", reason="spot check",
                                          spot_check=True)
        await h.owe(record, review)   # as the service does when the debate finishes
        await h.delivered()
        [request] = h.fake.messages(REVIEW_CHANNEL)
        assert request["text"].startswith("Spot check requested:")
        in_thread = json.dumps(h.fake.messages(CHANNEL))
        assert "Adopt it" in in_thread and "awaits a reviewer" not in in_thread
        h.assert_all_blocks_valid()
