"""A `/debate` acknowledged in Slack is not lost when its process dies before submitting it: the
start written down before the ack is finished by the dispatcher of a process still running (or
restarted), whichever step the dead process reached, and once only.

The whole stack runs (the real Bolt app, the worker, the dispatcher, the real slack_sdk client
against FakeSlack). A dead process is what it leaves in the database: a start it held whose
lease ran out, with or without the "starting" message's ts, with or without its submission."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.slack.parsing import parse_command
from bot.slack.recovery import GIVE_UP_AFTER
from bot.slack.starter import Place
from engine.domain import DebateRequest, utcnow
from storage import starts
from storage.outbox_rows import SlackStartRow
from storage.records import DebateStatus, Origin
from tests.support.slack_fixtures import CHANNEL, TEAM, USER, Harness, slack_harness
from tests.support.storage_fixtures import BACKENDS, migrated_database

TOPIC = "Should we move billing to PostgreSQL?"
KEY = "slack:1337.42.dead"


@asynccontextmanager
async def _on(backend: str, tmp_path: Path) -> AsyncIterator[Harness]:
    """The harness on SQLite, or on a PostgreSQL database of its own."""
    if backend == "sqlite":
        async with slack_harness(tmp_path) as h:
            yield h
        return
    async with migrated_database(backend, tmp_path) as database:
        url = database.url.render_as_string(hide_password=False)
        async with slack_harness(tmp_path, database_url=url) as h:
            yield h


def _request() -> DebateRequest:
    return parse_command(f"{TOPIC} --mode simple --rounds 0").request(requested_by=USER)


def _place() -> Place:
    return Place(channel_id=CHANNEL, user_id=USER, team_id=TEAM)


async def _left_by_a_dead_process(h: Harness, *, ago: timedelta = timedelta(minutes=1),
                                  message_ts: str | None = None) -> None:
    """What a process killed after the ack leaves: the start, held by it, its lease run out."""
    async with h.rt.db.transaction() as session:
        await starts.intend(session, key=KEY, place=asdict(_place()),
                            request=_request().model_dump(mode="json"), owner="gone:1",
                            now=utcnow() - ago, lease_seconds=10)
        if message_ts is not None:
            await starts.opened(session, KEY, owner="gone:1", message_ts=message_ts,
                                now=utcnow() - ago, lease_seconds=10)


async def _ended(h: Harness) -> tuple[str, str | None]:
    async def check() -> tuple[str, str | None] | None:
        async with h.rt.db.transaction(readonly=True) as session:
            found = await starts.status_of(session, KEY)
        return found if found is not None and found[0] != starts.PENDING else None

    return await h.wait_until(check, what="the start to end")


def _roots(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.fake.messages(CHANNEL)
            if m.get("thread_ts") in (None, m["ts"]) and TOPIC in json.dumps(m)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_command_writes_its_start_down_and_ends_it_with_the_debate(
        tmp_path: Path, backend: str) -> None:
    async with _on(backend, tmp_path) as h:
        await h.command(f"{TOPIC} --mode simple --rounds 0")
        debate = await h.one_debate()

        async def ended() -> list[tuple[str, str, str | None]] | None:
            async with h.rt.db.transaction(readonly=True) as session:
                rows = list(await session.scalars(select(SlackStartRow)))
            found = [(r.key, r.status, r.debate_id) for r in rows]
            return found if found and all(f[1] != starts.PENDING for f in found) else None

        kept = await h.wait_until(ended, what="the start to end")
    assert [(status, debate_id) for _, status, debate_id in kept] == [(starts.DONE, debate.id)]
    assert kept[0][0].startswith("slack:")


async def test_a_start_left_before_its_message_is_posted_and_run(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        await _left_by_a_dead_process(h)
        h.dispatcher.notify()
        status, debate_id = await _ended(h)
        assert debate_id is not None
        record = await h.wait_finished(debate_id)
        await h.delivered()
        roots = _roots(h)
    assert status == starts.DONE and record.status is DebateStatus.COMPLETED
    assert record.origin.channel_id == CHANNEL and record.origin.user_id == USER
    assert len(roots) == 1 and record.origin.thread_ts == roots[0]["ts"]


async def test_a_start_left_after_its_message_reuses_that_message(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        reply = await h.notifier.client.chat_postMessage(channel=CHANNEL,
                                                         text=f"Starting: {TOPIC}")
        await _left_by_a_dead_process(h, message_ts=str(reply["ts"]))
        h.dispatcher.notify()
        _, debate_id = await _ended(h)
        assert debate_id is not None
        record = await h.wait_finished(debate_id)
        roots = _roots(h)
    assert [m["ts"] for m in roots] == [reply["ts"]]          # no second "starting" message
    assert record.origin.thread_ts == reply["ts"]
    assert "Starting:" not in roots[0]["text"]                # edited to the started debate


async def test_a_start_left_after_its_submission_is_not_started_twice(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        reply = await h.notifier.client.chat_postMessage(channel=CHANNEL, text="Starting")
        origin = Origin(surface="slack", team_id=TEAM, channel_id=CHANNEL,
                        thread_ts=str(reply["ts"]), user_id=USER)
        first = await h.rt.service.submit(_request(), origin=origin, idempotency_key=KEY)
        await _left_by_a_dead_process(h, message_ts=str(reply["ts"]))
        h.dispatcher.notify()
        _, debate_id = await _ended(h)
        await h.wait_finished(first.record.id)
        debates = await h.debates()
    assert debate_id == first.record.id and [d.id for d in debates] == [first.record.id]


async def test_a_start_too_old_to_run_says_so_in_its_message(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        reply = await h.notifier.client.chat_postMessage(channel=CHANNEL, text="Starting")
        await _left_by_a_dead_process(h, ago=GIVE_UP_AFTER + timedelta(minutes=1),
                                      message_ts=str(reply["ts"]))
        h.dispatcher.notify()
        status, debate_id = await _ended(h)
        shown = h.fake.messages(CHANNEL)[-1]
        debates = await h.debates()
    assert (status, debate_id, debates) == (starts.FAILED, None, [])
    assert "Debate not started" in json.dumps(shown) and "/debate" in json.dumps(shown)


async def test_a_start_nobody_can_read_is_given_up_not_retried_forever(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        async with h.rt.db.transaction() as session:
            await starts.intend(session, key=KEY, place={"channel": CHANNEL},
                                request={"topic": ""}, owner="gone:1",
                                now=utcnow() - timedelta(minutes=1), lease_seconds=10)
        h.dispatcher.notify()
        status, _ = await _ended(h)
    assert status == starts.FAILED


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_start_is_written_down_before_its_ack_is_sent(tmp_path: Path,
                                                              backend: str) -> None:
    """Slack never sends an acknowledged command again: by the time its 200 arrives, the start
    must be in the database (a SIGKILL right after the ack leaves it for recovery to finish)."""
    async with _on(backend, tmp_path) as h:
        h.fake.slow("chat.postMessage", 2.0, times=1)   # what follows the ack cannot get far
        reply = await h.command(f"{TOPIC} --mode simple --rounds 0")
        async with h.rt.db.transaction(readonly=True) as session:
            rows = list(await session.scalars(select(SlackStartRow)))
    assert reply.status == 200 and "Estimate" in reply.json()["text"]
    assert [(r.status, r.message_ts, r.debate_id) for r in rows] == [(starts.PENDING, None, None)]
    assert TOPIC in json.dumps(rows[0].request)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_command_refused_as_bad_input_writes_no_start(tmp_path: Path,
                                                              backend: str) -> None:
    """The start is written while the estimate runs, but only once the request was checked: a
    preset that does not exist is answered with the usage and leaves nothing to recover."""
    async with _on(backend, tmp_path) as h:
        reply = await h.command(f"{TOPIC} --preset no-such-preset")
        async with h.rt.db.transaction(readonly=True) as session:
            rows = list(await session.scalars(select(SlackStartRow)))
        assert reply.status == 200 and "no-such-preset" in reply.json()["text"]
        assert rows == [] and await h.debates() == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_start_whose_estimate_fails_is_ended_never_recovered(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start is written while the estimate runs; when the estimate then fails (here: the
    budget read raising, as a database that drops the read would), the command was never
    acknowledged as started, so its written start is ended as failed and recovery leaves it."""
    async with _on(backend, tmp_path) as h:
        service = h.rt.service

        async def failing(*_args: Any, **_kw: Any) -> Any:
            raise ValueError("the day's budget could not be read")

        monkeypatch.setattr(service, "estimate", failing)
        reply = await h.command(f"{TOPIC} --mode simple --rounds 0")
        async with h.rt.db.transaction(readonly=True) as session:
            rows = list(await session.scalars(select(SlackStartRow)))
        assert reply.status == 200 and "budget could not be read" in reply.json()["text"]
        assert [(r.status, r.debate_id) for r in rows] == [(starts.FAILED, None)]
        assert "budget could not be read" in rows[0].last_error
        assert await h.debates() == [] and _roots(h) == []
