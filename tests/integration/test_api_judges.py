"""The judge audit and routing over HTTP, and the console's Judges page, on a served app over a
database holding a settled history with planted biases: the API names exactly those, every
figure carries n and an interval or says "not enough data", the OpenAPI document lists both
routes, the page shows the same to people (token-protected like the rest of the console)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.service.runtime import Runtime
from engine.domain import utcnow
from engine.settings import ThresholdSpec
from storage.db import Database
from tests.support.audit_fixtures import SyntheticJudge, history
from tests.support.http_fixtures import call, served
from tests.support.oversight_fixtures import REVIEWER, Clock, ending_now, settle_history
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "judges-token"
API = {"Authorization": f"Bearer {TOKEN}"}
JUDGES = [SyntheticJudge(name="technical"), SyntheticJudge(name="business", habit="first"),
          SyntheticJudge(name="risk", habit="harsh"),
          SyntheticJudge(name="general", habit="verbose")]
PLANTED = {"business": ["position_bias"], "general": ["verbosity_bias"], "risk": ["leniency"],
           "technical": []}


@pytest.fixture
async def app(sqlite_db: Database) -> AsyncIterator[tuple[str, Runtime]]:
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER, spot_check_fraction=0.0)
    async with served(sqlite_db, settings, workers=0) as (base, rt, _):
        planted = ending_now(history(JUDGES, seed=31, debates=200), utcnow())
        clock = Clock(planted[0].finished_at)
        rt.service.clock = clock
        await settle_history(rt.reviews, clock, planted)
        clock.now = utcnow()
        yield base.rstrip("/"), rt


async def test_the_api_reports_exactly_the_planted_biases(app: tuple[str, Runtime]) -> None:
    base, _ = app
    async with aiohttp.ClientSession() as s:
        status, _ = await call(s, "GET", f"{base}/api/judges")
        assert status == 401
        status, body = await call(s, "GET", f"{base}/api/judges", headers=API)
    assert status == 200
    assert {j["judge"]: j["flags"] for j in body["judges"]} == PLANTED
    assert body["debates"] == 200 and body["labelled"] > 20 and body["presets"] == []
    assert body["policy"]["min_verdicts"] == 30
    for judge in body["judges"]:
        assert judge["model"] == "gpt-4o-mini" and judge["debates"] == 200
        for name in ("position_bias", "verbosity_bias", "leniency", "drift",
                     "reviewer_agreement"):
            figure = judge[name]
            assert figure["status"] == "ok" and figure["n"] >= figure["min_n"]
            assert figure["interval"][0] <= figure["estimate"] <= figure["interval"][1]


@pytest.mark.parametrize(("query", "status", "said"), [
    ("?days=1", 200, "not enough data"),
    ("?preset=decision", 200, ""),
    ("?preset=nope", 400, "unknown preset 'nope'"),
    ("?days=0", 400, "days"),
    ("?days=abc", 400, "days"),
])
async def test_windows_presets_and_thin_data(app: tuple[str, Runtime], query: str, status: int,
                                             said: str) -> None:
    base, _ = app
    async with aiohttp.ClientSession() as s:
        got, body = await call(s, "GET", f"{base}/api/judges{query}", headers=API)
    assert got == status
    assert said in str(body)
    if query == "?days=1":
        thin = body["judges"][0]["position_bias"]
        assert thin["status"] == "not_enough_data" and thin["estimate"] is None
        assert thin["note"] == f"not enough data: {thin['n']} of the 30 needed"


async def test_routing_says_which_cut_offs_are_in_force(app: tuple[str, Runtime]) -> None:
    base, rt = app
    await rt.service.oversight.apply("decision", ThresholdSpec(high=0.9), by="ops",
                                     note="stricter")
    async with aiohttp.ClientSession() as s:
        status, body = await call(s, "GET", f"{base}/api/routing", headers=API)
        _, doc = await call(s, "GET", f"{base}/api/openapi.json", headers=API)
    assert status == 200
    decision = body["in_force"]["decision"]
    assert decision["source"] == "applied" and decision["thresholds"]["high"] == 0.9
    assert decision["applied"]["applied_by"] == "ops"
    assert decision["preset_thresholds"]["high"] == 0.8
    assert body["in_force"]["market"]["source"] == "preset"
    [measured] = body["routing"]["presets"]
    assert measured["routing"]["preset"] == "decision"
    assert measured["routing"]["results"]["human_review"] > 20
    routed = measured["routing"]["approved_unchanged"]["routed"]
    assert routed["status"] == "ok" and routed["n"] == measured["routing"]["results"][
        "human_review"]
    assert {"/api/judges", "/api/routing", "/judges"} <= set(doc["paths"])
    assert "JudgesOut" in doc["components"]["schemas"]


async def test_the_judges_page(app: tuple[str, Runtime]) -> None:
    base, rt = app
    await rt.service.oversight.apply("decision", ThresholdSpec(high=0.9), by="ops",
                                     note="stricter")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        async with s.get(f"{base}/judges") as locked:
            assert "token" in await locked.text() and "Judge audit" not in await locked.text()
        async with s.get(f"{base}/?token={TOKEN}") as signed_in:
            assert signed_in.status == 200
        async with s.get(f"{base}/judges") as reply:
            page = await reply.text()
        async with s.get(f"{base}/judges?days=1&preset=decision") as reply:
            thin = await reply.text()
        async with s.get(f"{base}/judges?preset=nope") as reply:
            text = await reply.text()
            assert reply.status == 400 and "unknown preset" in text, text
    assert 'href="/judges" aria-current="page"' in page
    assert page.count('class="flagged"') == 3        # one planted bias each, nothing else
    assert "100% vs" in page and "200 judged debates" in page
    assert "applied by ops" in page and "routing uses these over the preset" in page
    assert "not applied" in page or "No suggestion" in page
    assert "targets: 95% of auto-approved and 90% of published results upheld" in page
    assert "not enough data" in thin and 'value="decision" selected' in thin
