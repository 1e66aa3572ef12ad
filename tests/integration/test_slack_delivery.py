"""What a finished debate owes Slack is delivered exactly once, whatever else runs: a lease
renewer with a short lease while Slack answers slowly, failures retried, an answer lost after
Slack posted, another dispatcher, and the plan streamed or not (issue 31).

The whole stack runs: the real Bolt app, the worker with its renewer, the outbox's dispatcher,
the real slack_sdk client against FakeSlack, which carries a call out at once and answers it
late (`slow`), as Slack under load does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.slack.delivery import EVENT_TYPE, SlackDispatcher
from storage import outbox, reviews
from storage.records import DebateRecord, DebateStatus
from tests.support.slack_fixtures import CHANNEL, REVIEW_CHANNEL, STRICT, Harness, slack_harness

TOPICS = [f"Should team {n} move its billing to PostgreSQL?" for n in range(5)]


def _result_posts(h: Harness, record: DebateRecord) -> list[dict[str, Any]]:
    thread = record.origin.thread_ts or ""
    return [m for m in h.fake.replies(CHANNEL, thread)
            if "Debate result" in str(m.get("text", ""))]


def _review_posts(h: Harness, topic: str) -> list[dict[str, Any]]:
    return [m for m in h.fake.messages(REVIEW_CHANNEL) if topic in json.dumps(m)]


def _result_text(args: dict[str, Any]) -> bool:
    text = str(args.get("text", ""))
    return any(part in text for part in ("Debate result", "Review requested", "👀"))


async def _all_finished(h: Harness, count: int) -> list[DebateRecord]:
    found = await h.wait_until(lambda: _enough(h, count), what=f"{count} debates")
    return [await h.wait_finished(d.id) for d in found]


async def _enough(h: Harness, count: int) -> list[DebateRecord] | None:
    found = await h.debates()
    return found if len(found) >= count else None


@pytest.mark.parametrize(("streaming", "late_start"), [("off", 0.0), ("auto", 0.0),
                                                      ("auto", 3.0)])
async def test_every_result_is_delivered_once_with_a_short_lease_and_a_slow_slack(
        tmp_path: Path, streaming: str, late_start: float) -> None:
    """The lease renewer (every 0.2 s) used to take a finished debate for lost and cancel its
    Slack posts midway: no summary, no review request. Now every debate's result and review
    request arrive, once each; also into plans whose streams Slack started only after their
    debates finished (`late_start`)."""
    async with slack_harness(tmp_path, presets=STRICT, lease_seconds=0.6,
                             worker_concurrency=5, slack_streaming=streaming) as h:
        h.fake.slow("chat.postMessage", 0.8, when=_result_text)
        h.fake.slow("chat.update", 0.4)
        h.fake.slow("chat.stopStream", 0.8)
        if late_start:
            h.fake.slow("chat.startStream", late_start)
        for topic in TOPICS:
            await h.command(f"{topic} --preset strict")
        finished = await _all_finished(h, len(TOPICS))
        assert {r.status for r in finished} == {DebateStatus.AWAITING_REVIEW}
        await h.delivered(timeout=60)
        # as delivered: a plan whose stream Slack started late (its start queued behind slow
        # calls) names its stream only after the debate finished
        finished = [await h.wait_finished(r.id) for r in finished]
        for record in finished:
            topic = record.request.topic
            ended_in_plan = streaming == "auto" and record.origin.stream_ts
            if ended_in_plan:
                (stream,) = h.fake.streams_in(CHANNEL, record.origin.thread_ts or "")
                assert stream.stopped and "Debate result" in json.dumps(stream.blocks)
                assert _result_posts(h, record) == []
            else:
                assert len(_result_posts(h, record)) == 1, topic
            assert len(_review_posts(h, topic)) == 1, topic
            async with h.rt.db.transaction(readonly=True) as session:
                review = await reviews.get_by_debate(session, record.id)
            assert review is not None and review.message_ts
        h.assert_all_blocks_valid()


async def test_a_delivery_slack_refuses_is_retried_and_the_console_sees_why(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        h.fake.not_in_channel(REVIEW_CHANNEL)
        await h.command("Should we rewrite the scheduler in Rust? --preset strict")
        record = await h.wait_finished((await h.one_debate()).id)

        async def failed_once() -> bool:
            async with h.rt.db.transaction(readonly=True) as session:
                owed = await outbox.for_debate(session, record.id)
            return any(d.kind == "review_request" and d.attempts >= 1 for d in owed)

        await h.wait_until(failed_once, what="a failed attempt")
        async with h.rt.db.transaction(readonly=True) as session:
            backlog = await outbox.backlog(session)
            (owed,) = await outbox.undelivered(session)
        assert backlog.pending == 1 and "not_in_channel" in owed.last_error
        _, health = await _get(h, "/healthz")
        assert health["deliveries_pending"] == 1
        async with h.http.get(str(h.server.make_url("/deliveries"))) as resp:
            page = await resp.text()
        assert resp.status == 200 and record.id in page and "not_in_channel" in page
        assert "the review request, in the review channel" in page
        h.fake.invited(REVIEW_CHANNEL)
        async with h.rt.db.transaction() as session:   # due now rather than after the backoff
            await outbox.retry_now(session, owed.id, now=h.rt.service.clock())
        await h.delivered()
        assert len(_review_posts(h, record.request.topic)) == 1
        assert len(_result_posts(h, record)) == 1


async def test_a_post_whose_answer_was_lost_is_found_not_posted_again(tmp_path: Path) -> None:
    """The process died after Slack posted the summary and before it heard back: the next
    dispatcher finds the message by its metadata and does not post it a second time."""
    async with slack_harness(tmp_path, presets=STRICT, workers=0) as h:
        await h.command("Should we rewrite the scheduler in Rust? --preset strict")
        h.rt.service.outbox_targets = frozenset()   # owed by hand below, claimed as it dies
        record = await _finish_by_hand(h, await h.one_debate())
        now = h.rt.service.clock()
        async with h.rt.db.transaction() as session:   # what the dead process had done
            await outbox.owe(session, debate_id=record.id, kind="thread_result", ref="1",
                             now=now)
            [owed] = await outbox.claim_due(session, owner="dead", now=now, lease_seconds=1.0,
                                            limit=1)
            await outbox.save_state(session, owed.id, owner="dead", lease_seconds=1.0, now=now,
                                    state={"done": {"settle": {"carried": False}},
                                           "sending": {"summary": now.isoformat()}})
        await h.notifier.client.chat_postMessage(   # what Slack had posted when it died
            channel=CHANNEL, thread_ts=record.origin.thread_ts, text="Debate result: (posted)",
            metadata={"event_type": EVENT_TYPE, "event_payload": {
                "delivery": f"{owed.id}:summary"}})
        await h.wait_until(lambda: _due(h, owed.id), what="the dead claim to run out")
        await h.delivered()
        assert len(_result_posts(h, record)) == 1
        assert h.fake.calls_to("conversations.replies")


async def _due(h: Harness, delivery_id: int) -> bool:
    async with h.rt.db.transaction(readonly=True) as session:
        [owed] = [d for d in await outbox.undelivered(session) if d.id == delivery_id] or [None]
    return owed is None or owed.status == "pending"


async def test_two_dispatchers_deliver_each_obligation_once(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        await h.command("Should we adopt Bazel?")
        record = await _finish_by_hand(h, await h.one_debate())
        other = SlackDispatcher(h.notifier, owner="second-process")
        await other.round()
        await h.delivered()
        await other.drain()
        assert len(_result_posts(h, record)) == 1


async def test_an_unfurled_card_is_refreshed_when_its_debate_finishes(tmp_path: Path) -> None:
    """The card a transcript link unfurled into while the debate was queued shows its end once
    it finishes (chat.unfurl on the same message again), through the outbox."""
    async with slack_harness(tmp_path, workers=0) as h:
        await h.command("Should we adopt Bazel?")
        record = await h.one_debate()
        url = h.rt.url(record.id)
        event = h.fake.share_link(CHANNEL, url, user="UALICE")
        await h.event(event)
        first = await h.fake.wait_for("chat.unfurl")
        assert "queued" in _card(first.args)["status"].lower(), _card(first.args)
        finished = await _finish_by_hand(h, record)
        await h.delivered()
        calls = h.fake.calls_to("chat.unfurl")
        assert len(calls) == 2, [c.args for c in calls]
        again = calls[-1].args
        assert (again["channel"], again["ts"]) == (CHANNEL, event["message_ts"])
        assert finished.status is DebateStatus.COMPLETED
        assert _card(again)["status"] == "✅ Finished" and "verdict" in _card(again)


def _card(args: dict[str, Any]) -> dict[str, str]:
    [entity] = args["metadata"]["entities"]
    return {f["key"]: f["value"] for f in entity["entity_payload"]["custom_fields"]}


async def _finish_by_hand(h: Harness, record: DebateRecord) -> DebateRecord:
    """Run the debate through the service (no worker), so it finishes and owes its thread."""
    from storage import queue
    async with h.rt.db.transaction() as session:
        claimed = await queue.claim_one(session, record.id, worker_id="hand", lease_seconds=30,
                                        now=h.rt.service.clock())
    assert claimed is not None
    return await h.rt.service.execute(claimed, worker_id="hand")


async def _get(h: Harness, path: str) -> tuple[int, Any]:
    async with h.http.get(str(h.server.make_url(path))) as resp:
        return resp.status, await resp.json()


__all__ = ["EVENT_TYPE"]
