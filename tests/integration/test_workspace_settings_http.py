"""A workspace's settings from the API and the console: the operator (the API token, its console
session) reads and changes any workspace's, bad values are one line and change nothing, every
change is audited as the operator's; a reviewer's token opens neither."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.service.grants import reviewer_grant
from storage import audit
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "s3cret-token-for-workspace-settings"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEAM = "T0SECOND"


async def _page(s: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, str]:
    async with s.request(method, url, **kw) as resp:
        return resp.status, await resp.text()


async def test_the_operator_changes_a_workspace_by_api_and_console(db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN, daily_budget_usd=20.0, reviewers=("UOPER",))
    async with served(db, settings, workers=0) as (base, rt, _):
        url = f"{base}/api/workspaces/{TEAM}/settings"
        async with aiohttp.ClientSession() as s:
            assert (await call(s, "GET", url))[0] == 401
            status, found = await call(s, "GET", url, headers=AUTH)
            assert status == 200 and found["daily_budget_usd"] == 20.0 and found["own"] == []
            status, body = await call(s, "POST", url, headers=AUTH,
                                      json={"daily_budget_usd": "25"})
            assert status == 400 and "at most the operator's daily budget of $20" in body["error"]
            status, found = await call(s, "POST", url, headers=AUTH,
                                       json={"daily_budget_usd": "5", "reviewers": "<@U0REV>"})
            assert status == 200 and found["own"] == ["daily_budget_usd", "reviewers"]
            assert (found["daily_budget_usd"], found["reviewers"]) == (5.0, ["U0REV"])
            reviewer = {"Authorization": f"Bearer {reviewer_grant(settings.service, 'UOPER')}"}
            assert (await call(s, "GET", url, headers=reviewer))[0] == 403
            assert (await call(s, "POST", url, headers=reviewer,
                               json={"daily_budget_usd": "1"}))[0] == 403
            assert (await call(s, "GET", f"{base}/api/workspaces/nope/settings",
                               headers=AUTH))[0] == 404
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as s:
            await _page(s, "GET", f"{base}/?token={TOKEN}")
            page_url = f"{base}/workspaces/{TEAM}/settings"
            status, text = await _page(s, "GET", page_url)
            assert status == 200 and 'name="daily_budget_usd" value="5"' in text
            origin = {"Origin": base.rstrip("/")}
            for headers in ({}, {"Origin": "https://evil.example"}):   # not said same-origin
                status, _ = await _page(s, "POST", page_url, headers=headers,
                                        data={"daily_budget_usd": "1"})
                assert status in (403, 415)
            status, text = await _page(s, "POST", page_url, headers=origin, data={
                "daily_budget_usd": "5", "reviewers": "U0REV", "review_channel": "#general"})
            assert status == 400 and "is no Slack channel id" in text
            status, text = await _page(s, "POST", page_url, headers=origin, data={
                "daily_budget_usd": "", "reviewers": "U0REV", "review_channel": "C0REVIEWS",
                "thresholds": "decision high=0.9"})
            assert status == 200 and "Saved." in text and "C0REVIEWS (this workspace" in text
            assert "decision high=0.9" in text
        async with rt.db.transaction(readonly=True) as session:
            changes = [e for e in await audit.events(session, None)
                       if e.kind == "workspace_settings_changed"]
        assert [(e.actor, e.data["changed"]) for e in changes] == [
            ("operator", ["daily_budget_usd", "reviewers"]),
            ("operator", ["daily_budget_usd", "review_channel", "thresholds"])]
        assert changes[1].data["before"]["daily_budget_usd"] == 5.0
        assert changes[1].data["after"] == {"daily_budget_usd": None,
                                            "review_channel": "C0REVIEWS",
                                            "thresholds": {"decision": {"high": 0.9}}}
