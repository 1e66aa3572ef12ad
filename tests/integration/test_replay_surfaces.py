"""Replay on its surfaces, against the suite's provider: `dialectic replay` through its entry
point and `POST /api/debates/ID/replay` over real HTTP print or return the estimate of the calls
the provider then receives, and refuse what the mode cannot do in one line, changing nothing."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from bot.settings import load_settings
from engine.domain import DebateRequest
from storage.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_replay_modes import API, TOPIC, env_for, finished, provider
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import service, wait_done

__all__ = ["clean_env", "cli", "provider"]  # fixtures

pytestmark = pytest.mark.integration

REFUSED = "a redteam debate is one fixed chain of steps with no rounds to add"


async def test_the_cli_replays_a_consensus_debate_with_one_more_round(
        cli: Cli, tmp_path: Path, provider: FakeOpenAI) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    env = {**env_for(provider.base_url), "DATABASE_URL": url}
    assert (await asyncio.to_thread(cli, "db", "upgrade", env=env)).returncode == 0
    db = Database(url)
    svc = service(db, load_settings(env))
    ids = {}
    for mode in ("consensus", "redteam"):
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode=mode), origin=API)
        ids[mode] = (await finished(svc, sub.record.id)).id
    listed = [r.id for r in await svc.recent()]
    before = len(provider.requests)

    refused = await asyncio.to_thread(cli, "replay", ids["redteam"], "--rounds", "1", env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    lines = (refused.stdout + refused.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + REFUSED)
    assert [r.id for r in await svc.recent()] == listed and len(provider.requests) == before

    done = await asyncio.to_thread(cli, "replay", ids["consensus"], "--rounds", "1", "--wait",
                                   env=env)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    made = provider.requests[before:]
    queued = re.search(r"queued: (\d+) steps read from the source, (\d+) new calls", done.stdout)
    assert queued is not None, done.stdout
    assert int(queued[1]) == 4 and int(queued[2]) == len(made) == 8
    roles = re.search(r"Mode consensus: (\d+) calls \(([^)]*)\)", done.stdout)
    assert roles is not None and int(roles[1]) == len(made)
    printed = {role: int(n) for role, n in (part.split() for part in roles[2].split(", "))}
    assert printed == Counter(r.role.split("/", 1)[0] for r in made)
    replay = (await svc.recent())[0]
    assert replay.parent_id == ids["consensus"] and replay.request.rounds == 2
    await svc.aclose()
    await db.dispose()


async def test_the_api_replays_with_more_rounds_and_refuses_what_a_mode_cannot_do(
        db: Database, provider: FakeOpenAI) -> None:
    settings = load_settings(env_for(provider.base_url))
    async with served(db, settings) as (base, rt, _), aiohttp.ClientSession() as s:
        ids = {}
        for mode in ("structured", "redteam"):
            status, body = await call(s, "POST", f"{base}/api/debates",
                                      json={"topic": TOPIC, "mode": mode})
            assert status == 202, body
            ids[mode] = (await wait_done(rt.service, body["id"], timeout=120)).id
        before = len(provider.requests)
        _, listing = await call(s, "GET", f"{base}/api/debates")

        status, body = await call(s, "POST", f"{base}/api/debates/{ids['redteam']}/replay",
                                  json={"rounds": 1})
        assert status == 400 and body["error"].startswith(REFUSED), body
        assert "\n" not in body["error"]
        assert (await call(s, "GET", f"{base}/api/debates"))[1] == listing
        assert len(provider.requests) == before

        status, body = await call(s, "POST", f"{base}/api/debates/{ids['structured']}/replay",
                                  json={"rounds": 1})
        assert status == 202 and body["parent_id"] == ids["structured"], body
        record = await wait_done(rt.service, body["id"], timeout=120)
    made = provider.requests[before:]
    estimate = body["estimate"]
    assert estimate["calls"] == len(made) == sum(estimate["calls_per_role"].values()) == 5
    assert estimate["calls_per_role"] == Counter(r.role.split("/", 1)[0] for r in made)
    assert record.result is not None
    assert "cross-examination 2" in [p.name for p in record.result.phases]
