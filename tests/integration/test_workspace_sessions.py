"""Issue 34, requirement 3: console sessions and reviewer links are each one workspace's. Two
installed workspaces (T1, T2) and an uninstalled third (T3, uninstalled through the real
`app_uninstalled` event) on the whole stack, on SQLite and PostgreSQL: every console page and
API route a workspace's sign-in reaches shows and acts on its own workspace's records only (the
others' and the operator's are 404, not 403), the operator's pages over every workspace are
refused, and T3's link, token and session open nothing."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from storage.db import Database
from tests.support.workspace_world import OPERATOR, T1, T2, T3, TOKEN, World, workspace_world

pytestmark = pytest.mark.integration

OWNERS = (T1, T2, T3, OPERATOR)
OPERATOR_WIDE = [("GET", "/judges"), ("GET", "/evaluations"), ("GET", "/deliveries"),
                 ("GET", "/api/judges"), ("GET", "/api/routing"), ("GET", "/api/evaluations"),
                 ("GET", "/api/deliveries"), ("GET", "/api/budget"), ("GET", "/api/metrics"),
                 ("GET", "/metrics"), ("GET", "/api/schedules"), ("POST", "/mcp")]


async def status_of(s: aiohttp.ClientSession, method: str, url: str, **kw: object) -> int:
    async with s.request(method, url, **kw) as resp:   # type: ignore[arg-type]
        await resp.read()
        return resp.status


async def sees(w: World, s: aiohttp.ClientSession, mine: str, *,
               headers: dict[str, str] | None = None) -> None:
    """What a sign-in of workspace `mine` reads: its debate and review on every surface, no
    other's (404 for one asked by id). A token as the bearer opens the API, not the console's
    pages (a browser's session does)."""
    base, kw = w.base, {"headers": headers or {}}
    pages = () if headers else ("/debates/{id}", "/debates/{id}/live")
    async with s.get(f"{base}/api/debates", **kw) as listed:
        assert listed.status == 200
        assert [d["id"] for d in (await listed.json())["debates"]] == [w.debates[mine]]
    async with s.get(f"{base}/api/debates", params={"status": "awaiting_review"}, **kw) as q:
        assert [d["id"] for d in (await q.json())["debates"]] == [w.debates[mine]]
    async with s.get(f"{base}/api/reviews", **kw) as pending:
        assert [r["id"] for r in (await pending.json())["reviews"]] == [w.reviews[mine]]
    for owner in OWNERS:
        expected = 200 if owner == mine else 404
        debate = w.debates[owner]
        for path in ("/api/debates/{id}", "/api/debates/{id}/events", *pages):
            url = base + path.format(id=debate)
            assert await status_of(s, "GET", url, **kw) == expected, (owner, path)
    for page in () if headers else ("/", "/reviews"):
        async with s.get(f"{base}{page}", **kw) as shown:
            text = await shown.text()
        assert shown.status == 200 and w.topic(mine) in text, page
        assert not [o for o in OWNERS if o != mine and w.topic(o) in text], page
        assert 'href="/judges"' not in text and 'href="/evaluations"' not in text, page


async def refused_beyond(w: World, s: aiohttp.ClientSession, mine: str, *,
                         headers: dict[str, str] | None = None) -> None:
    """The operator's pages, and every other workspace's settings, are refused; deciding
    another workspace's review (or the operator's) finds no such review."""
    kw = {"headers": headers or {}}
    for method, path in OPERATOR_WIDE:
        assert await status_of(s, method, f"{w.base}{path}", json={}, **kw) == 403, path
    for team in (T1, T2, T3):
        if team != mine:
            for path in (f"/workspaces/{team}/settings", f"/api/workspaces/{team}/settings"):
                assert await status_of(s, "GET", f"{w.base}{path}", **kw) == 403, path
    for owner in OWNERS:
        if owner != mine:
            url = f"{w.base}/api/reviews/{w.reviews[owner]}/decision"
            async with s.post(url, json={"decision": "approve"}, **kw) as decided:
                assert decided.status == 404, owner
                assert w.debates[owner] not in await decided.text()


@pytest.fixture
async def world(tmp_path: Path, db: Database) -> World:
    async with workspace_world(tmp_path, db) as w:
        yield w   # type: ignore[misc]


async def test_each_workspaces_link_session_sees_its_own_and_nothing_else(world: World) -> None:
    w = world
    for team in (T1, T2):   # each way: T1 sees T1's, not T2's; T2 the mirror
        async with w.browser() as s:
            status, page = await w.sign_in_by_link(s, w.links[team])
            assert status == 200, page
            await sees(w, s, team)
            await refused_beyond(w, s, team)


async def test_a_workspaces_reviewer_token_as_the_bearer_is_scoped_the_same(world: World
                                                                             ) -> None:
    w = world
    for team in (T2, T1):
        bearer = {"Authorization": f"Bearer {w.links[team]}"}
        async with w.browser() as s:
            await sees(w, s, team, headers=bearer)
            await refused_beyond(w, s, team, headers=bearer)


async def test_sign_in_with_slack_begins_the_session_of_the_workspace_signed_in_with(
        world: World) -> None:
    w = world
    for team, user in ((T2, "UREV2"), (T1, "UREV1")):
        async with w.browser() as s:
            status, page = await w.sign_in_with_slack(s, user, team)
            assert status == 200 and f"<b>{user}</b>" in page, page
            await sees(w, s, team)
            await refused_beyond(w, s, team)
    # the same person signing in with the other workspace is that workspace's reviewer or no one
    async with w.browser() as s:
        status, page = await w.sign_in_with_slack(s, "UREV1", T2)
        assert status == 403 and "neither a reviewer nor an admin of the Slack workspace T2TWO" \
            in page
        assert not [c for c in s.cookie_jar if c.key == "dialectic_session"]


async def test_decisions_act_on_the_workspaces_own_reviews_and_re_runs_stay_in_it(
        world: World) -> None:
    w = world
    async with w.browser() as s:
        assert (await w.sign_in_by_link(s, w.links[T1]))[0] == 200
        url = f"{w.base}/api/reviews/{w.reviews[T1]}/decision"
        async with s.post(url, json={"decision": "rerun", "reason": "one judge timed out"}
                          ) as decided:
            body = await decided.json()
            assert decided.status == 200, body
        rerun = body["rerun_id"]
        assert (await w.h.rt.service.get(rerun)).origin.team_id == T1
        async with s.get(f"{w.base}/api/debates") as listed:
            assert {d["id"] for d in (await listed.json())["debates"]} == {w.debates[T1], rerun}
    async with w.browser() as s:
        assert (await w.sign_in_by_link(s, w.links[T2]))[0] == 200
        assert await status_of(s, "GET", f"{w.base}/api/debates/{rerun}") == 404
        assert await status_of(s, "GET", f"{w.base}/debates/{rerun}") == 404
    for owner in (T2, T3, OPERATOR):   # nobody else's review was touched
        assert (await w.h.rt.reviews.get(w.reviews[owner])).status.value == "pending"


async def test_the_uninstalled_workspaces_link_token_and_session_open_nothing(
        world: World) -> None:
    w = world
    gone = "the Slack workspace T3GONE does not have Dialectic installed"
    async with w.browser() as s:
        status, page = await w.sign_in_by_link(s, w.links[T3])
        assert status == 403 and gone in page
        assert not [c for c in s.cookie_jar if c.key == "dialectic_session"]
    bearer = {"Authorization": f"Bearer {w.links[T3]}"}
    async with w.browser(cookie=w.t3_cookie) as s:   # the session begun before, and the token
        for headers in ({}, bearer):
            for path in ("/api/debates", "/api/reviews", f"/api/debates/{w.debates[T3]}"):
                async with s.get(f"{w.base}{path}", headers=headers) as resp:
                    assert resp.status == 403 and gone in (await resp.json())["error"], path
        async with s.get(f"{w.base}/") as home:
            text = await home.text()
        assert not [o for o in OWNERS if w.topic(o) in text]
        async with s.post(f"{w.base}/api/reviews/{w.reviews[T3]}/decision",
                          json={"decision": "approve"}) as decided:
            assert decided.status == 403
    async with w.browser() as s:
        status, page = await w.sign_in_with_slack(s, "UOPER", T3)
        assert status == 403 and gone in page
    assert (await w.h.rt.reviews.get(w.reviews[T3])).status.value == "pending"


async def test_values_signed_without_a_workspace_open_only_the_operators_everything(
        world: World) -> None:
    from bot.service.grants import reviewer_grant

    w = world
    unscoped = reviewer_grant(w.h.rt.settings, "UOPER")   # as links were issued before
    async with w.browser() as s:
        async with s.get(f"{w.base}/api/debates",
                         headers={"Authorization": f"Bearer {unscoped}"}) as resp:
            assert resp.status == 403 and "names no Slack workspace" in await resp.text()
        status, page = await w.sign_in_by_link(s, unscoped)
        assert status == 403 and "names no Slack workspace" in page
    async with w.browser() as s:
        assert await status_of(s, "GET", f"{w.base}/?token={TOKEN}") == 200
        async with s.get(f"{w.base}/api/debates") as listed:
            ids = {d["id"] for d in (await listed.json())["debates"]}
        assert ids == set(w.debates.values())
        for method, path in OPERATOR_WIDE[:5]:
            assert await status_of(s, method, f"{w.base}{path}") == 200, path


async def test_a_reviewer_taken_off_the_workspaces_list_is_out_at_the_next_request(
        world: World) -> None:
    w = world
    async with w.browser() as s:
        assert (await w.sign_in_by_link(s, w.links[T1]))[0] == 200
        assert await status_of(s, "GET", f"{w.base}/api/debates") == 200
        await w.set_reviewers(T1, "USOMEONE")
        async with s.get(f"{w.base}/api/debates") as resp:
            assert resp.status == 403
            assert "UREV1 is neither a reviewer nor an admin" in (await resp.json())["error"]
