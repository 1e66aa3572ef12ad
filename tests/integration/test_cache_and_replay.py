"""Cache and replay do what they say (docs/caching-and-replay.md), through the real service on
SQLite, the real `openai` client and the suite's fake provider: a result awaiting review answers
the same request, marked as awaiting review; an identical replay is answered by the first one; an
estimate names what it reuses and prices only the new calls, at the new calls' dependent rounds;
a replay that reuses steps says so in `list`, the API and the console; Slack says a cached answer
still awaits a reviewer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.cli.service import _list_row
from bot.service.results import marks
from bot.settings import Settings, load_settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_slack_e2e import LOPSIDED, _judge
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import running_worker, service, wait_done
from tests.support.slack_fixtures import CHANNEL, blocks_text, slack_harness

__all__ = ["clean_env", "cli"]  # fixtures

pytestmark = pytest.mark.integration

API = Origin(surface="api")
TOPIC = "Should we move billing to PostgreSQL?"
JUDGES = 4   # the consensus preset's panel


@pytest.fixture
async def provider() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(replies="typical", seed=5) as fake:
        yield fake


def settings_for(fake: FakeOpenAI, **env: str) -> Settings:
    """A team's settings on the provider, the caches as they ship unless `env` says."""
    return load_settings({"OPENAI_API_KEY": TEST_API_KEY, "OPENAI_BASE_URL": fake.base_url,
                          "DIALECTIC_BACKOFF_BASE": "0.01", "DIALECTIC_BACKOFF_CAP": "0.05",
                          "DIALECTIC_CONFIG": os.devnull, **env})


async def test_a_result_awaiting_review_answers_the_same_request_marked_as_such(
        sqlite_db: Database, provider: FakeOpenAI) -> None:
    svc = service(sqlite_db, settings_for(provider))
    request = DebateRequest(topic=TOPIC, preset="decision")
    first = await svc.submit(request, origin=API)
    async with running_worker(svc):
        done = await wait_done(svc, first.record.id, timeout=120)
    assert done.status is DebateStatus.AWAITING_REVIEW
    paid = len(provider.requests)

    quoted = await svc.estimate(request)
    assert quoted.cached_from == done.id and quoted.calls == 0 and quoted.usd_high == 0
    assert quoted.reused == len(provider.requests)
    again = await svc.submit(request, origin=API)
    assert again.cached and again.record.id == done.id
    assert again.record.status is DebateStatus.AWAITING_REVIEW   # not passed off as approved
    assert again.estimate.calls == 0 and again.estimate.usd_high == 0
    assert len(provider.requests) == paid                        # not paid twice
    fresh = await svc.submit(request.model_copy(update={"no_cache": True}), origin=API)
    assert not fresh.cached and fresh.record.id != done.id
    await svc.aclose()


async def consensus_source(svc_settings: Settings, db: Database) -> str:
    svc = service(db, svc_settings)
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="consensus", no_cache=True),
                           origin=API)
    async with running_worker(svc):
        done = await wait_done(svc, sub.record.id, timeout=120)
    await svc.aclose()
    assert done.result is not None
    return done.id


async def test_an_identical_replay_is_answered_by_the_first_and_estimates_say_what_is_reused(
        sqlite_db: Database, provider: FakeOpenAI) -> None:
    settings = settings_for(provider)
    source = await consensus_source(settings, sqlite_db)
    svc = service(sqlite_db, settings)
    before = len(provider.requests)
    first = await svc.replay(source, synthesizer="gpt-4.1", actor="api")
    estimate = first.estimate
    assert not first.cached
    assert (estimate.calls, estimate.reused, estimate.depth) == (JUDGES, 6, 1)  # one round
    assert f"replay of {source}, 6 steps to reuse" in [m.text for m in marks(first.record)]
    async with running_worker(svc):
        replayed = await wait_done(svc, first.record.id, timeout=120)
    assert len(provider.requests) - before == JUDGES
    assert replayed.result is not None and replayed.result.cost.reused_calls == 6

    paid = len(provider.requests)
    second = await svc.replay(source, synthesizer="gpt-4.1", actor="api")
    assert second.cached and second.record.id == replayed.id
    assert (second.estimate.calls, second.estimate.usd_high) == (0, 0)
    assert second.estimate.cached_from == replayed.id
    assert second.estimate.reused == JUDGES + 6
    assert len(provider.requests) == paid
    asked_anew = await svc.replay(source, synthesizer="gpt-4.1", actor="api", no_cache=True)
    assert not asked_anew.cached and asked_anew.record.id != replayed.id
    # a fresh request for the same question is never answered by a replay of another debate
    fresh = await svc.submit(DebateRequest(topic=TOPIC, mode="consensus"), origin=API)
    assert fresh.record.id not in (replayed.id, asked_anew.record.id)
    await svc.aclose()


async def test_a_replay_that_reuses_steps_says_so_on_every_list(
        sqlite_db: Database, provider: FakeOpenAI) -> None:
    settings = settings_for(provider)
    source = await consensus_source(settings, sqlite_db)
    async with served(sqlite_db, settings) as (base, rt, _), aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", f"{base}/api/debates/{source}/replay",
                                  json={"synthesizer": "gpt-4.1"})
        assert status == 202, body
        assert body["estimate"]["reused"] == 6 and body["estimate"]["depth"] == 1
        record = await wait_done(rt.service, body["id"], timeout=120)
        said = f"replay of {source}, 6 steps reused"
        assert said in [m.text for m in marks(record)]
        assert said in _list_row(record, rehearsal=False)[-1]         # dialectic list
        _, listing = await call(s, "GET", f"{base}/api/debates")
        listed = next(d for d in listing["debates"] if d["id"] == record.id)
        assert said in listed["marks"]
        async with s.get(f"{base}/") as page:                          # the console
            assert said in await page.text()

        status, again = await call(s, "POST", f"{base}/api/debates/{source}/replay",
                                   json={"synthesizer": "gpt-4.1"})
        assert status == 200 and again["id"] == record.id and again["cached"], again
        assert again["estimate"]["calls"] == 0 and again["estimate"]["cached_from"] == record.id


async def test_dialectic_replay_announces_what_it_reuses_and_what_it_pays_for(
        cli: Cli, tmp_path: Path, provider: FakeOpenAI) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    env = {"OPENAI_API_KEY": TEST_API_KEY, "OPENAI_BASE_URL": provider.base_url,
           "DATABASE_URL": url, "DIALECTIC_CONFIG": os.devnull}
    assert (await asyncio.to_thread(cli, "db", "upgrade", env=env)).returncode == 0
    db = Database(url)
    source = await consensus_source(settings_for(provider, DATABASE_URL=url), db)
    await db.dispose()
    replay = ("replay", source, "--synthesizer", "gpt-4.1", "--wait")
    before = len(provider.requests)
    quoted = await asyncio.to_thread(cli, "estimate", TOPIC, "--mode", "consensus", env=env)
    said = " ".join(quoted.stdout.split())   # prices a new run, as `dialectic run` makes one
    assert "Mode consensus: 10 calls" in said and "4 dependent rounds" in said, said
    assert f"Debate {source}, finished within the cache window, answers this same question" in said

    first = await asyncio.to_thread(cli, *replay, env=env)
    assert first.returncode in (0, 3), first.stdout + first.stderr
    said = " ".join(first.stdout.split())        # as printed, whatever the terminal's width
    assert "queued: 6 steps read from the source, 4 new calls" in said
    assert "Mode consensus: 4 calls (judge 4), 1 dependent round" in said
    assert "6 steps read from the source debate at no cost" in said
    assert len(provider.requests) - before == JUDGES
    second = await asyncio.to_thread(cli, *replay, env=env)
    assert second.returncode in (0, 3), second.stdout + second.stderr
    said = " ".join(second.stdout.split())
    assert f"the same replay of {source} finished within the cache window" in said
    assert "its result (10 steps) is reused, no new calls, $0" in said
    assert "0 new calls, $0" in said and "dependent round" not in said
    assert len(provider.requests) - before == JUDGES                  # nothing paid twice
    listed = await asyncio.to_thread(cli, "list", env=env)
    assert " ".join(listed.stdout.split()).count(f"replay of {source}, 6 steps reused") == 1


async def test_past_the_cache_window_an_identical_replay_pays_exactly_what_it_announces(
        sqlite_db: Database, provider: FakeOpenAI) -> None:
    """The judge cache stays on; it never answers a replay's judges behind its estimate."""
    settings = settings_for(provider, DIALECTIC_CACHE_TTL_SECONDS="0")
    source = await consensus_source(settings, sqlite_db)
    svc = service(sqlite_db, settings)
    for _ in range(3):
        before = len(provider.requests)
        sub = await svc.replay(source, synthesizer="gpt-4.1", actor="api")
        assert not sub.cached and sub.estimate.calls == JUDGES
        async with running_worker(svc):
            done = await wait_done(svc, sub.record.id, timeout=120)
        assert len(provider.requests) - before == JUDGES
        assert done.result is not None and done.result.cost.calls == JUDGES
        assert done.result.cost.reused_calls == 6
    await svc.aclose()


async def test_slack_says_a_cached_answer_still_awaits_a_reviewer(tmp_path: Path) -> None:
    """/debate twice on Slack, the first result awaiting review: the second thread gets that
    result, saying it awaits a reviewer, and nothing is paid again."""
    async with FakeOpenAI() as openai:
        openai.script(_judge, LOPSIDED)   # the panel splits: routed to a reviewer
        async with slack_harness(tmp_path, openai=openai, cache_ttl_seconds=3600) as h:
            await h.command(TOPIC)
            first = await h.one_debate()
            assert (await h.wait_finished(first.id)).status is DebateStatus.AWAITING_REVIEW
            await h.notifier.drain()
            def roots() -> list[dict[str, Any]]:
                return [m for m in h.fake.messages(CHANNEL)
                        if m.get("thread_ts", m["ts"]) == m["ts"]]

            paid = len(openai.requests)
            reply = await h.command(TOPIC)
            assert reply.status == 200 and f"debate `{first.id}`" in reply.json()["text"]
            assert "no new calls, $0" in reply.json()["text"]   # the ack: nothing starts
            root = await h.wait_until(lambda: roots()[1:], what="the second root message")
            root = root[0]
            note = await h.wait_reply(CHANNEL, root["ts"], "♻️")
            assert f"debate `{first.id}`" in note["text"]
            assert "still awaiting a reviewer's decision" in note["text"]
            assert "no new calls, $0" in blocks_text(root)
            assert [d.id for d in await h.debates()] == [first.id]
            assert len(openai.requests) == paid
            h.assert_all_blocks_valid()
