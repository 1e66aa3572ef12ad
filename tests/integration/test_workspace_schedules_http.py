"""A workspace's schedules from the API and the console: the operator (the API token, its console
session) adds, edits, pauses, resumes and removes them by the same rules as App Home; bad values
are one line and change nothing; every change is audited with before and after; a reviewer's
token opens none of it; another workspace's schedule is not found from this one's path."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.service.grants import reviewer_grant
from storage import audit
from storage import workspace_schedules as store
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "s3cret-token-for-workspace-schedules"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEAM, OTHER = "T0SECOND", "T0THIRD"
GOOD: dict[str, Any] = {"name": "morning", "preset": "market", "cron": "0 8 * * 1-5",
                        "timezone": "Europe/Paris", "channel": "C0MARKETS",
                        "topics": ["Brent crude breaks $90", "The ECB cuts rates"]}


async def _page(s: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, str]:
    async with s.request(method, url, **kw) as resp:
        return resp.status, await resp.text()


async def _changes(db: Database) -> list[tuple[str, str, Any, Any]]:
    async with db.transaction(readonly=True) as session:
        return [(e.kind, e.actor, e.data["before"], e.data["after"])
                for e in await audit.events(session, None) if e.kind.startswith(
                    "workspace_schedule_")]


async def test_the_operator_manages_a_workspaces_schedules_by_api(db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN)
    async with served(db, settings, workers=0) as (base, _, _):
        url = f"{base}/api/workspaces/{TEAM}/schedules"
        async with aiohttp.ClientSession() as s:
            assert (await call(s, "GET", url))[0] == 401
            refused = [({**GOOD, "cron": "*/5 * * * *"}, "cron: at most once an hour"),
                       ({**GOOD, "cron": "0 25 * * *"}, "cron: "),
                       ({**GOOD, "timezone": "Mars/Olympus"}, "unknown time zone"),
                       ({**GOOD, "preset": "nope"}, "preset: no preset 'nope'"),
                       ({**GOOD, "topics": ["\u200b \u2060"]}, "topics: "),
                       ({**GOOD, "topics": []}, "topics: give at least one topic"),
                       ({**GOOD, "channel": "#general"}, "channel: give its id"),
                       ({**GOOD, "name": "Morning Run"}, "name: lowercase letters")]
            for body, message in refused:
                status, answer = await call(s, "POST", url, headers=AUTH, json=body)
                assert status == 400 and message in answer["error"], (body, answer)
                assert "\n" not in answer["error"]
            assert (await call(s, "GET", url, headers=AUTH))[1]["schedules"] == []
            status, added = await call(s, "POST", url, headers=AUTH, json=GOOD)
            assert status == 201 and added["name"] == "morning" and added["enabled"] is True
            assert added["next_run"] is not None and added["cron"] == "0 8 * * 1-5"
            status, twice = await call(s, "POST", url, headers=AUTH, json=GOOD)
            assert status == 400 and "named 'morning' already" in twice["error"]
            one = f"{url}/{added['id']}"
            status, paused = await call(s, "POST", one, headers=AUTH, json={"enabled": False})
            assert status == 200 and paused["enabled"] is False and paused["next_run"] is None
            status, edited = await call(s, "POST", one, headers=AUTH,
                                        json={"cron": "30 9 * * *", "enabled": True})
            assert status == 200 and (edited["cron"], edited["enabled"]) == ("30 9 * * *", True)
            # another workspace's path does not reach it
            elsewhere = f"{base}/api/workspaces/{OTHER}/schedules/{added['id']}"
            assert (await call(s, "POST", elsewhere, headers=AUTH, json={"enabled": False})
                    )[0] == 404
            assert (await call(s, "POST", f"{elsewhere}/remove", headers=AUTH, json={}))[0] == 404
            assert (await call(s, "GET", f"{base}/api/workspaces/{OTHER}/schedules",
                               headers=AUTH))[1]["schedules"] == []
            reviewer = {"Authorization": f"Bearer {reviewer_grant(settings.service, 'UREV')}"}
            assert (await call(s, "GET", url, headers=reviewer))[0] == 403
            assert (await call(s, "POST", url, headers=reviewer, json=GOOD))[0] == 403
            status, left = await call(s, "POST", f"{one}/remove", headers=AUTH, json={})
            assert status == 200 and left["schedules"] == []
    changes = await _changes(db)
    assert [(kind, actor) for kind, actor, _, _ in changes] == [
        ("workspace_schedule_added", "operator"), ("workspace_schedule_changed", "operator"),
        ("workspace_schedule_changed", "operator"), ("workspace_schedule_changed", "operator"),
        ("workspace_schedule_removed", "operator")]
    assert changes[0][2] is None and changes[0][3]["topics"] == GOOD["topics"]
    assert (changes[1][2]["enabled"], changes[1][3]["enabled"]) == (True, False)
    assert (changes[2][2]["cron"], changes[2][3]["cron"]) == ("0 8 * * 1-5", "30 9 * * *")
    assert changes[4][2]["name"] == "morning" and changes[4][3] is None


async def test_the_console_page_adds_edits_pauses_and_removes(db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN)
    async with served(db, settings, workers=0) as (base, rt, _):
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as s:
            page_url = f"{base}/workspaces/{TEAM}/schedules"
            status, text = await _page(s, "GET", page_url)
            assert "Sign in" in text or status in (401, 403)     # no session: locked
            await _page(s, "GET", f"{base}/?token={TOKEN}")
            status, text = await _page(s, "GET", page_url)
            assert status == 200 and "No schedules yet." in text
            origin = {"Origin": base.rstrip("/")}
            form = {**GOOD, "topics": "\n".join(GOOD["topics"]), "action": "save"}
            status, _ = await _page(s, "POST", page_url, headers={"Origin": "https://evil.example"},
                                    data=form)
            assert status in (403, 415)
            status, text = await _page(s, "POST", page_url, headers=origin,
                                       data={**form, "cron": "* * * * *"})
            assert status == 400 and "cron: at most once an hour" in text
            assert 'id="cron" name="cron" value="* * * * *" placeholder="0 8 * * 1-5" ' \
                   'aria-invalid="true"' in text
            status, text = await _page(s, "POST", page_url, headers=origin, data=form)
            assert status == 200 and "Saved." in text and "Brent crude breaks $90" in text
            async with rt.db.transaction(readonly=True) as session:
                (saved,) = await store.list_for(session, TEAM)
            status, text = await _page(s, "GET", f"{page_url}?edit={saved.id}")
            assert f'name="id" value="{saved.id}"' in text and "Edit morning" in text
            status, text = await _page(s, "POST", page_url, headers=origin,
                                       data={**form, "id": saved.id, "topics": "Only one"})
            assert status == 200 and "Only one" in text and "Brent" not in text
            status, text = await _page(s, "POST", page_url, headers=origin,
                                       data={"action": "pause", "id": saved.id})
            assert status == 200 and "paused" in text and 'value="resume"' in text
            status, text = await _page(s, "POST", page_url, headers=origin,
                                       data={"action": "remove", "id": saved.id})
            assert status == 200 and "No schedules yet." in text
    assert [kind for kind, *_ in await _changes(db)] == [
        "workspace_schedule_added", "workspace_schedule_changed", "workspace_schedule_changed",
        "workspace_schedule_removed"]
