"""The REST API on a real aiohttp server on loopback: submit, follow, stream, refuse bad input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from pydantic import SecretStr, ValidationError

from bot.http.api import DebateIn
from bot.http.server import check_exposure
from bot.service.runtime import Runtime, build_runtime
from bot.settings import Settings
from engine.domain import DebateRequest
from engine.errors import ConfigurationError, validation_message
from engine.vocabulary import MAX_JUDGES, MAX_ROUNDS
from storage.db import Database
from tests.support.http_fixtures import app_for, served
from tests.support.http_fixtures import call as _json
from tests.support.service_fixtures import rehearsal_settings

TOPIC = "Should we move billing to PostgreSQL?"


@pytest.fixture
async def api(db: Database) -> AsyncIterator[tuple[str, Runtime]]:
    async with served(db, rehearsal_settings()) as (base, rt, _):
        yield base, rt


async def test_post_follow_and_read_a_debate(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, body = await _json(s, "POST", f"{base}/api/debates",
                                   json={"topic": TOPIC, "mode": "consensus"})
        assert status == 202 and body["status"] == "queued" and body["rehearsal"] is True
        assert body["estimate"]["calls"] == 10
        debate_id = body["id"]
        events: list[dict[str, Any]] = []
        async with s.get(f"{base}/api/debates/{debate_id}/events") as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            async with asyncio.timeout(30):
                async for line in resp.content:
                    if line.startswith(b"data: "):
                        events.append(json.loads(line[6:]))
        kinds = [e["kind"] for e in events]
        assert kinds[0] == "debate_created" and "phase_started" in kinds
        assert "debate_finished" in kinds
        assert events[-2]["kind"] == "status_changed" and events[-2]["data"]["to"] == "completed"
        # the last word: settled, so a browser's EventSource stops instead of reconnecting
        assert events[-1] == {"kind": "settled", "status": "completed",
                              "after": events[-2]["seq"]}
        status, record = await _json(s, "GET", f"{base}/api/debates/{debate_id}")
        assert status == 200 and record["status"] == "completed"
        assert record["result"]["consensus"]["alpha"] is not None
        status, listing = await _json(s, "GET", f"{base}/api/debates?status=completed")
        assert [d["id"] for d in listing["debates"]] == [debate_id]
        async with s.get(f"{base}/debates/{debate_id}") as page:
            html = await page.text()
        assert page.status == 200 and "Rehearsal mode" in html and "Krippendorff" in html


@pytest.mark.parametrize(("body", "message"), [
    ({}, "topic"),
    ({"topic": "x" * 20_000}, "limit"),
    ({"topic": "ok", "mode": "shouting"}, "mode: Input should be 'simple', 'structured'"),
    ({"topic": "ok", "rounds": 99}, "rounds"),
    ({"topic": "ok", "surprise": 1}, "surprise"),
    ({"topic": "ok", "spotlight_nonce": "a" * 32}, "the service sets each debate's spotlight"),
    ([1, 2], "JSON object"),
])
async def test_bad_input_gets_a_clear_4xx_and_changes_nothing(
        api: tuple[str, Runtime], body: Any, message: str) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, reply = await _json(s, "POST", f"{base}/api/debates", json=body)
        assert status == 400 and message in reply["error"]
        _, listing = await _json(s, "GET", f"{base}/api/debates")
    assert listing["debates"] == []


@pytest.mark.parametrize(("body", "unset"), [
    ({"topic": "t"}, {"mode", "preset", "rounds", "judges"}),
    ({"topic": "t", "mode": None, "rounds": None}, {"mode", "preset", "rounds", "judges"}),
    ({"topic": "t", "mode": "panel", "rounds": 2, "idempotency_key": "k"},
     {"preset", "judges"}),
])
def test_the_api_body_is_a_debate_request_leaving_the_preset_what_it_omits(
        body: dict[str, Any], unset: set[str]) -> None:
    request = DebateIn.model_validate(body).request()
    assert type(request) is DebateRequest and request.requested_by == "api"
    assert unset.isdisjoint(request.model_fields_set)
    assert ("mode" in request.model_fields_set) is (body.get("mode") is not None)


@pytest.mark.parametrize("fields", [
    {"topic": ""}, {"rounds": MAX_ROUNDS + 1}, {"rounds": -1}, {"judges": 0},
    {"judges": MAX_JUDGES + 1}, {"mode": "shouting"}, {"no_cache": "perhaps"},
])
def test_the_api_body_refuses_what_a_debate_request_refuses_in_the_same_words(
        fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as by_api:
        DebateIn.model_validate({"topic": "t", **fields})
    with pytest.raises(ValidationError) as by_engine:
        DebateRequest.model_validate({"topic": "t", **fields})
    assert validation_message(by_api.value) == validation_message(by_engine.value)


async def test_a_refusal_is_the_validation_message_itself(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, reply = await _json(s, "POST", f"{base}/api/debates",
                                    json={"topic": "ok", "rounds": 99, "surprise": 1})
    assert status == 400
    assert reply == {"error": "rounds: Input should be less than or equal to 5; "
                              "surprise: Extra inputs are not permitted"}


async def test_malformed_json_and_oversized_bodies(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, reply = await _json(s, "POST", f"{base}/api/debates", data=b"{not json",
                                    headers={"Content-Type": "application/json"})
        assert status == 400 and "not valid JSON" in reply["error"]
        status, reply = await _json(s, "POST", f"{base}/api/debates",
                                    json={"topic": "y" * 400_000})
        assert status == 413
        status, reply = await _json(s, "GET", f"{base}/api/debates/nope")
        assert status == 404
        status, reply = await _json(s, "GET", f"{base}/api/debates?status=weird")
        assert status == 400


async def test_estimate_metrics_health_presets_openapi(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, est = await _json(s, "POST", f"{base}/api/estimate",
                                  json={"topic": TOPIC, "mode": "structured"})
        assert status == 200 and est["calls"] == 7 and est["depth"] == 4
        status, health = await _json(s, "GET", f"{base}/healthz")
        assert status == 200 and health["ok"] and health["rehearsal"]
        status, metrics = await _json(s, "GET", f"{base}/api/metrics")
        assert status == 200 and "budget" in metrics
        status, presets = await _json(s, "GET", f"{base}/api/presets")
        assert {"market", "decision", "compliance", "appeal", "brief"} <= set(presets)
        status, doc = await _json(s, "GET", f"{base}/api/openapi.json")
        assert status == 200 and "/api/debates" in doc["paths"]


async def test_a_token_protects_the_api_and_signed_links_open_one_transcript(
        db: Database) -> None:
    settings = rehearsal_settings(api_token="s3cret-token")
    async with served(db, settings) as (base, _, _), aiohttp.ClientSession() as s:
        status, reply = await _json(s, "POST", f"{base}/api/debates", json={"topic": TOPIC})
        assert status == 401 and "s3cret" not in json.dumps(reply)
        auth = {"Authorization": "Bearer s3cret-token"}
        status, body = await _json(s, "POST", f"{base}/api/debates", json={"topic": TOPIC},
                                   headers=auth)
        assert status == 202
        link = body["links"]["transcript"]
        assert "sig=" in link and "exp=" in link
        path = link.split("://", 1)[1].split("/", 1)[1]
        async with s.get(f"{base}/{path}") as page:
            assert page.status == 200
        signed = dict(parse_qsl(path.split("?", 1)[1]))
        forged = {**signed, "sig": signed["sig"][:-1] + ("1" if signed["sig"][-1] == "0" else "0")}
        for read in (f"/api/debates/{body['id']}", f"/debates/{body['id']}/live"):
            async with s.get(f"{base}{read}", params=signed) as opened:
                assert opened.status == 200, read      # what the signed page itself asks for
            async with s.get(f"{base}{read}", params=forged) as refused:
                assert refused.status in (401, 403), read
        status, _ = await _json(s, "GET", f"{base}/api/debates", params=signed)
        assert status == 401                        # a signature opens its own debate only
        async with s.get(f"{base}/debates/{body['id']}") as page:
            assert page.status == 403
        status, _ = await _json(s, "GET", f"{base}/healthz")
        assert status == 200


async def test_events_resume_after_the_last_event_id(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        _, body = await _json(s, "POST", f"{base}/api/debates",
                              json={"topic": TOPIC, "mode": "simple"})
        url = f"{base}/api/debates/{body['id']}/events"
        every = await _event_ids(s, url)
        assert every == sorted(every) and len(every) > 4
        assert await _event_ids(s, url, headers={"Last-Event-ID": str(every[2])}) == every[3:]
        assert await _event_ids(s, url, params={"after": str(every[-2])}) == every[-1:]
        status, reply = await _json(s, "GET", url, headers={"Last-Event-ID": "seven"})
        assert status == 400 and reply["error"].startswith("Last-Event-ID: Input should be")
        status, reply = await _json(s, "GET", url, params={"after": "-1"})
        assert status == 400 and reply["error"].startswith("after: Input should be")
        huge = str(10**30)   # past any sequence number a chain holds: refused before SQL
        for kw in ({"params": {"after": huge}}, {"headers": {"Last-Event-ID": huge}}):
            status, reply = await _json(s, "GET", url, **kw)
            assert status == 400 and "2147483647" in reply["error"], reply


async def _event_ids(s: aiohttp.ClientSession, url: str, **kw: Any) -> list[int]:
    ids = []
    async with s.get(url, **kw) as resp, asyncio.timeout(30):
        assert resp.status == 200
        async for line in resp.content:
            if line.startswith(b"id: "):
                ids.append(int(line[4:]))
    return ids


def test_without_a_token_only_loopback_is_served() -> None:
    with pytest.raises(ConfigurationError, match="DIALECTIC_API_TOKEN"):
        check_exposure(Settings(rehearsal=True).service, "0.0.0.0")
    check_exposure(Settings(rehearsal=True).service, "127.0.0.1")
    check_exposure(Settings(rehearsal=True, api_token="t" * 32).service, "0.0.0.0")
    blank = Settings(rehearsal=True).service.model_copy(update={"api_token": SecretStr("  ")})
    with pytest.raises(ConfigurationError, match="without DIALECTIC_API_TOKEN"):
        check_exposure(blank, "0.0.0.0")


async def test_briefs_and_schedules_over_the_api(api: tuple[str, Runtime]) -> None:
    base, _ = api
    async with aiohttp.ClientSession() as s:
        status, reply = await _json(s, "POST", f"{base}/api/briefs",
                                    json={"topic": "Postgres or DynamoDB?", "channel": "C0123ABCD",
                                          "at": "2099-01-05T09:30:00+00:00"})
        assert status == 201 and reply["status"] == "pending"
        assert reply["start_at"] < reply["meeting_at"]
        status, reply = await _json(s, "POST", f"{base}/api/briefs",
                                    json={"topic": "x", "channel": "C1", "at": "tomorrow"})
        assert status == 400 and "at" in reply["error"]
        status, reply = await _json(s, "POST", f"{base}/api/briefs",
                                    json={"topic": "x", "channel": "C1",
                                          "at": "2099-01-05T09:30:00"})
        assert status == 400 and reply["error"] == (
            "at: give the meeting time with a UTC offset, e.g. 2026-11-23T09:30:00+01:00")
        status, reply = await _json(s, "GET", f"{base}/api/schedules")
        assert status == 200 and reply == {"schedules": []}


async def test_prometheus_metrics_count_debates_and_steps(sqlite_db: Database) -> None:
    url = f"sqlite+aiosqlite:///{sqlite_db.url.database}"
    settings = rehearsal_settings(database_url=url)
    rt = await build_runtime(settings.engine, settings.service, settings.storage, migrate=False)
    server = TestServer(app_for(rt, settings), host="127.0.0.1", port=0)
    await server.start_server()
    base = str(server.make_url(""))
    try:
        async with aiohttp.ClientSession() as s:
            _, body = await _json(s, "POST", f"{base}/api/debates",
                                  json={"topic": "Metrics?", "mode": "simple"})
            async with asyncio.timeout(30):
                while (await _json(s, "GET", f"{base}/api/debates/{body['id']}"))[1][
                        "result"] is None:
                    await asyncio.sleep(0.05)
            async with s.get(f"{base}/metrics") as resp:
                text = await resp.text()
        assert 'dialectic_debates_submitted_total{mode="simple"}' in text
        assert 'dialectic_llm_steps_total{outcome="ok"}' in text
        assert "dialectic_debates_finished_total" in text
    finally:
        await server.close()
        await rt.close()
