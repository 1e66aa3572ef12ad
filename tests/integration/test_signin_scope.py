"""Who a sign-in lets in, over the real server (issue 22): a reviewer's link, token or session
reads the debates and decides reviews, nothing else, and only while its person is a reviewer;
signing out ends a session wherever its cookie went; a link signs in only by its page's button
(same origin) and not for longer than it lives; Origin checks compare the scheme too; Sign in with
Slack admits this workspace's reviewers only and stays on this site afterwards."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.grants import Identity, Purpose, Scope, key_of, reviewer_grant, seal
from bot.service.runtime import Runtime
from bot.settings import Settings
from bot.slack.signin import SlackSignIn
from bot.slack.usergroups import SlackUserGroups
from storage.db import Database
from tests.fakes.slack_server import FakeSlack
from tests.support.http_fixtures import call, free_port, served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "scope-test-token-long-enough-for-a-network-0123"
REVIEWER, GROUP_MEMBER, OUTSIDER = "UREV", "UGROUPIE", "UOUT"
API = {"Authorization": f"Bearer {TOKEN}"}
REVIEW_ONLY = "a reviewer's sign-in reads the debates and decides reviews, nothing else"
COOKIE = "dialectic_session"
FORM = "application/x-www-form-urlencoded"

Stack = tuple[str, Runtime, Settings]


@pytest.fixture
async def stack(sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Stack]:
    """A token-protected server; UREV and the members of user group S1 are the reviewers."""
    port = free_port()
    monkeypatch.setenv("DIALECTIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("DIALECTIC_REVIEWERS", f"{REVIEWER},S1")
    monkeypatch.setenv("DIALECTIC_PUBLIC_URL", f"http://127.0.0.1:{port}")
    settings = rehearsal_settings()
    async with served(sqlite_db, settings, port=port, workers=0) as (base, rt, _):
        yield base.rstrip("/"), rt, settings


def jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(unsafe=True)


def session_cookie(s: aiohttp.ClientSession) -> str | None:
    return next((c.value for c in s.cookie_jar if c.key == COOKIE), None)


async def press_link_button(s: aiohttp.ClientSession, base: str, grant: str, *,
                            to: str = "/reviews") -> aiohttp.ClientResponse:
    """Open a reviewer link (a page, no sign-in yet) and press its button."""
    async with s.get(f"{base}/signin/link", params={"grant": grant, "to": to}) as page:
        text = await page.text()
        assert page.status == 200, text
    assert session_cookie(s) is None
    assert '<form method="post" action="/signin/link"' in text
    async with s.post(f"{base}/signin/link", data={"grant": grant, "to": to}) as done:
        await done.read()
        return done


async def a_debate(s: aiohttp.ClientSession, base: str) -> str:
    status, body = await call(s, "POST", f"{base}/api/debates", headers=API,
                              json={"topic": "Should we move billing to PostgreSQL?",
                                    "mode": "simple"})
    assert status == 202, body
    return str(body["id"])


REFUSED_TO_REVIEWERS = [
    ("POST", "/api/debates", {"topic": "Spend the budget?", "mode": "simple"}),
    ("POST", "/api/estimate", {"topic": "Spend the budget?", "mode": "simple"}),
    ("POST", "/api/debates/{id}/retry", {}),
    ("POST", "/api/debates/{id}/replay", {"rounds": 1}),
    ("POST", "/api/briefs", {"topic": "A brief", "channel_id": "C1"}),
    ("GET", "/metrics", None), ("GET", "/api/metrics", None), ("GET", "/api/schedules", None),
    ("GET", "/api/budget", None), ("GET", "/api/judges", None),
    ("GET", "/api/evaluations", None),
]


@pytest.mark.parametrize("how", ["link session", "reviewer token"])
async def test_a_reviewer_reads_the_debates_and_decides_nothing_else(stack: Stack,
                                                                     how: str) -> None:
    base, rt, settings = stack
    grant = reviewer_grant(settings.service, REVIEWER)
    headers = {"Authorization": f"Bearer {grant}"} if how == "reviewer token" else {}
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        debate_id = await a_debate(s, base)
        if how == "link session":
            assert (await press_link_button(s, base, grant)).status == 200
        for path in ("/api/debates", f"/api/debates/{debate_id}", "/api/reviews"):
            status, _ = await call(s, "GET", f"{base}{path}", headers=headers)
            assert status == 200, path
        for method, path, body in REFUSED_TO_REVIEWERS:
            async with s.request(method, f"{base}{path.format(id=debate_id)}", json=body,
                                 headers=headers) as resp:
                assert resp.status == 403, (method, path, resp.status)
                assert (await resp.json())["error"] == REVIEW_ONLY
        if how == "link session":
            async with s.get(f"{base}/") as home:
                page = await home.text()
            assert f"Reviewer <b>{REVIEWER}</b>" in page and 'id="start"' not in page
            async with s.get(f"{base}/evaluations") as evaluations:   # read, as /judges is
                assert evaluations.status == 200 and "<h1>Evaluations</h1>" in (
                    await evaluations.text())
    assert [r.id for r in await rt.service.recent()] == [debate_id]   # nothing else started


async def test_the_api_tokens_session_opens_everything(stack: Stack) -> None:
    base, rt, _ = stack
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        async with s.get(f"{base}/", params={"token": TOKEN}) as signed:
            assert signed.status == 200
        status, body = await call(s, "POST", f"{base}/api/debates",
                                  json={"topic": "Is the operator in charge?", "mode": "simple"})
        assert status == 202, body
        for path in ("/metrics", "/api/budget", "/api/schedules"):
            async with s.get(f"{base}{path}") as resp:
                assert resp.status == 200, path
    assert len(await rt.service.recent()) == 1


@pytest.mark.parametrize(("user", "why"), [
    (OUTSIDER, f"{OUTSIDER} is not a configured reviewer"),
    ("", "a sign-in names a configured reviewer: this one names nobody"),
])
async def test_a_link_for_someone_not_a_reviewer_opens_nothing(stack: Stack, user: str,
                                                               why: str) -> None:
    """However it was made (an older version issued them for anyone, or for nobody)."""
    base, _, settings = stack
    key = key_of(settings.service)
    assert key is not None
    grant = seal(key, Purpose.REVIEWER, Identity(user, 2**40, "link", Scope.REVIEW))
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        for send in (s.get, s.post):
            kw = {"params": {"grant": grant}} if send == s.get else {"data": {"grant": grant}}
            async with send(f"{base}/signin/link", **kw) as page:
                assert page.status == 403 and why in await page.text()
            assert session_cookie(s) is None
        status, body = await call(s, "GET", f"{base}/api/debates",
                                  headers={"Authorization": f"Bearer {grant}"})
    assert status == 403 and body["error"].startswith(why)


async def test_taking_someone_out_of_a_reviewer_group_ends_their_session_at_once(
        stack: Stack) -> None:
    base, rt, settings = stack
    async with FakeSlack() as slack:
        slack.set_usergroup("S1", [GROUP_MEMBER])
        client = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
        rt.reviews.reviewers.directory = SlackUserGroups(client, ttl=0)
        grant = reviewer_grant(settings.service, GROUP_MEMBER)
        bearer = {"Authorization": f"Bearer {grant}"}
        async with aiohttp.ClientSession(cookie_jar=jar()) as s:
            assert (await press_link_button(s, base, grant)).status == 200
            assert (await call(s, "GET", f"{base}/api/reviews"))[0] == 200
            assert (await call(s, "GET", f"{base}/api/reviews", headers=bearer))[0] == 200
            slack.set_usergroup("S1", [])
            status, body = await call(s, "GET", f"{base}/api/reviews")
            assert status == 403 and body["error"].startswith(
                f"{GROUP_MEMBER} is not a configured reviewer")
            assert (await call(s, "GET", f"{base}/api/reviews", headers=bearer))[0] == 403
            async with s.get(f"{base}/reviews") as page:
                assert "Sign in to the console" in await page.text()


async def test_a_session_outlives_no_restart_that_drops_its_reviewer(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.setenv("DIALECTIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("DIALECTIC_PUBLIC_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("DIALECTIC_REVIEWERS", REVIEWER)
    before = rehearsal_settings()
    async with served(sqlite_db, before, port=port, workers=0) as (base, _, _), \
            aiohttp.ClientSession(cookie_jar=jar()) as s:
        assert (await press_link_button(s, base.rstrip("/"),
                                        reviewer_grant(before.service, REVIEWER))).status == 200
        cookie = session_cookie(s)
    assert cookie is not None
    monkeypatch.setenv("DIALECTIC_REVIEWERS", "UOTHER")
    async with served(sqlite_db, rehearsal_settings(), port=port, workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        status, body = await call(s, "GET", f"{base.rstrip('/')}/api/reviews",
                                  headers={"Cookie": f"{COOKIE}={cookie}"})
    assert status == 403 and body["error"].startswith(f"{REVIEWER} is not a configured reviewer")


@pytest.mark.parametrize("who", ["operator", "reviewer"])
async def test_signing_out_ends_a_copied_session(stack: Stack, who: str) -> None:
    base, _, settings = stack
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        if who == "operator":
            async with s.get(f"{base}/", params={"token": TOKEN}) as signed:
                assert signed.status == 200
        else:
            grant = reviewer_grant(settings.service, REVIEWER)
            assert (await press_link_button(s, base, grant)).status == 200
        copied = {"Cookie": f"{COOKIE}={session_cookie(s)}"}
        async with aiohttp.ClientSession() as thief:
            assert (await call(thief, "GET", f"{base}/api/debates", headers=copied))[0] == 200
            async with s.post(f"{base}/signout", allow_redirects=False) as out:
                assert out.status == 303
            status, body = await call(thief, "GET", f"{base}/api/debates", headers=copied)
            assert status == 403 and body["error"] == "that session was signed out: sign in again"
            async with thief.get(f"{base}/", headers=copied) as page:
                assert "Sign in to the console" in await page.text()
        async with s.get(f"{base}/", params={"token": TOKEN}) as again:   # a new one works
            assert again.status == 200
        assert (await call(s, "GET", f"{base}/api/debates"))[0] == 200


@pytest.mark.parametrize(("origin", "status"), [
    ("http://dialectic.example", 403), ("https://dialectic.example:8443", 403),
    ("https://dialectic.example", 202), ("https://dialectic.example:443", 202),
])
async def test_an_origin_must_be_this_servers_in_scheme_host_and_port(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch, origin: str, status: int) -> None:
    monkeypatch.setenv("DIALECTIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("DIALECTIC_PUBLIC_URL", "https://dialectic.example")
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, rt, _), \
            aiohttp.ClientSession() as s:
        got, _ = await call(s, "POST", f"{base.rstrip('/')}/api/debates",
                            json={"topic": "Whose origin is this?", "mode": "simple"},
                            headers={**API, "Host": "dialectic.example", "Origin": origin})
    assert got == status
    assert len(await rt.service.recent()) == (1 if status == 202 else 0)


async def test_a_link_signs_in_only_by_its_own_pages_button(stack: Stack) -> None:
    """Login CSRF: a cross-site page can make a browser GET a link, or POST it cross-origin;
    neither signs it in."""
    base, _, settings = stack
    grant = reviewer_grant(settings.service, REVIEWER)
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        async with s.get(f"{base}/signin/link", params={"grant": grant}) as page:
            text = await page.text()
            assert page.status == 200 and session_cookie(s) is None
            assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", text))  # none inline
        assert f'<input type="hidden" name="grant" value="{grant}">' in text
        for body, kind in ((b"--x--", "multipart/form-data"), (b"\xff", FORM),
                           (f'{{"grant": "{grant}"}}'.encode(), "application/json")):
            async with s.post(f"{base}/signin/link", data=body,
                              headers={"Content-Type": kind}) as odd:
                assert odd.status == 400 and session_cookie(s) is None, kind
        async with s.post(f"{base}/signin/link", data={"grant": grant},
                          headers={"Origin": "https://evil.example"}) as forged:
            assert forged.status == 403 and session_cookie(s) is None
        async with s.post(f"{base}/signin/link", data={"grant": grant},
                          headers={"Origin": base}) as pressed:
            assert pressed.status == 200 and session_cookie(s) is not None
            assert f"signed in as reviewer <b>{REVIEWER}</b>" in await pressed.text()


async def test_a_session_from_a_link_ends_when_the_link_does(stack: Stack) -> None:
    base, rt, settings = stack
    now = rt.service.clock().timestamp()
    grant = reviewer_grant(settings.service, REVIEWER, seconds=3600, clock=lambda: now)
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        pressed = await press_link_button(s, base, grant)
        max_age = int(pressed.cookies[COOKIE]["max-age"])
        assert 0 < max_age <= 3600     # not the 12 hours of DIALECTIC_CONSOLE_SESSION_HOURS
        assert (await call(s, "GET", f"{base}/api/reviews"))[0] == 200
        kept = {"Cookie": f"{COOKIE}={session_cookie(s)}"}   # a browser keeping it past its age
    real = rt.service.clock
    rt.service.clock = lambda: real() + timedelta(hours=2)
    async with aiohttp.ClientSession() as s:
        status, _ = await call(s, "GET", f"{base}/api/reviews", headers=kept)
    assert status == 401


@pytest.fixture
async def slack_sign_in(stack: Stack, monkeypatch: pytest.MonkeyPatch
                        ) -> AsyncIterator[tuple[str, FakeSlack]]:
    base, rt, _ = stack
    async with FakeSlack(team_id="T0OURS") as slack:
        slack.oidc_client("1234.5678", "client-secret")
        for name, value in {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-1",
                            "SLACK_API_URL": slack.base_url, "SLACK_CLIENT_ID": "1234.5678",
                            "SLACK_CLIENT_SECRET": "client-secret"}.items():
            monkeypatch.setenv(name, value)
        rt.sign_in = SlackSignIn(Settings().slack)
        yield base, slack


async def test_sign_in_with_slack_admits_this_workspaces_reviewers_only(
        slack_sign_in: tuple[str, FakeSlack]) -> None:
    base, slack = slack_sign_in
    refusals = {(REVIEWER, "T0THEIRS"): "you signed in to another Slack workspace than this",
                (OUTSIDER, None): f"{OUTSIDER} is not a configured reviewer"}
    for (user, team), why in refusals.items():
        async with aiohttp.ClientSession(cookie_jar=jar()) as s:
            slack.sign_in_as(user, team_id=team)
            async with s.get(f"{base}/signin/slack") as refused:
                assert refused.status == 403 and why in await refused.text()
            assert session_cookie(s) is None
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        slack.sign_in_as(REVIEWER)
        async with s.get(f"{base}/signin/slack") as admitted:
            assert f"signed in as reviewer <b>{REVIEWER}</b>" in await admitted.text()
        assert (await call(s, "GET", f"{base}/api/reviews"))[0] == 200
        status, body = await call(s, "POST", f"{base}/api/debates",
                                  json={"topic": "May I?", "mode": "simple"})
        assert status == 403 and body["error"] == REVIEW_ONLY
    assert len(slack.calls_to("auth.test")) == 1   # the workspace is asked once


@pytest.mark.parametrize("disguise", ["/\t/evil.example", "/\\evil.example", "\\/evil.example",
                                      "/\r\n/evil.example/x", "//evil.example"])
async def test_sign_in_with_slack_stays_on_this_origin_whatever_the_target(
        slack_sign_in: tuple[str, FakeSlack], disguise: str) -> None:
    base, slack = slack_sign_in
    slack.sign_in_as(REVIEWER)
    async with aiohttp.ClientSession(cookie_jar=jar()) as s:
        async with s.get(f"{base}/signin/slack", params={"to": disguise}) as landed:
            page = await landed.text()
    assert f"signed in as reviewer <b>{REVIEWER}</b>" in page
    assert 'content="1;url=/"' in page and 'id="continue" href="/"' in page
