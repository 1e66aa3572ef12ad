"""Reviews over HTTP, with the same rules as Slack's buttons: only a reviewer's identity (a
console session begun by a reviewer link or Sign in with Slack, or a reviewer token) decides;
configured reviewers and user groups only, refusals audited; a reason to escalate; decided once;
a re-run is a new debate. The API token alone names nobody."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.grants import reviewer_grant
from bot.service.runtime import Runtime
from bot.settings import Settings
from bot.slack.settings import SlackSettings
from bot.slack.signin import SlackSignIn
from bot.slack.usergroups import SlackUserGroups
from engine.domain import DebateRequest
from engine.vocabulary import Mode
from storage import audit
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.slack_server import FakeSlack
from tests.support.http_fixtures import call, free_port, served
from tests.support.service_fixtures import rehearsal_settings, running_worker, wait_done

TOKEN = "reviews-test-token"
REVIEWER, GROUP_MEMBER, OUTSIDER = "UREV", "UGROUPIE", "UOUT"
SPLIT_TOPIC = "Should we move billing to PostgreSQL (red team)?"   # no consensus: reviewed
API = {"Authorization": f"Bearer {TOKEN}"}

Stack = tuple[str, Runtime, Settings]


@pytest.fixture
async def stack(sqlite_db: Database) -> AsyncIterator[Stack]:
    port = free_port()
    settings = rehearsal_settings(api_token=TOKEN, reviewers=f"{REVIEWER},S1",
                                  public_url=f"http://127.0.0.1:{port}")
    async with served(sqlite_db, settings, port=port) as (base, rt, _):
        yield base.rstrip("/"), rt, settings


async def awaiting_review(rt: Runtime, topic: str = SPLIT_TOPIC) -> str:
    sub = await rt.service.submit(DebateRequest(topic=topic, mode=Mode.REDTEAM,
                                                no_cache=True), origin=Origin(surface="api"))
    async with running_worker(rt.service):
        record = await wait_done(rt.service, sub.record.id)
    assert record.status is DebateStatus.AWAITING_REVIEW
    return record.id


def as_reviewer(settings: Settings, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {reviewer_grant(settings.service, user)}"}


async def review_id(rt: Runtime, debate_id: str) -> str:
    review = await rt.reviews.for_debate(debate_id)
    assert review is not None
    return review.id


async def audited(rt: Runtime, debate_id: str) -> list[tuple[str, str]]:
    async with rt.db.transaction(readonly=True) as session:
        return [(e.kind, e.actor) for e in await audit.events(session, debate_id)]


async def test_decisions_follow_the_review_desks_rules(stack: Stack) -> None:
    base, rt, settings = stack
    debate_id = await awaiting_review(rt)
    rid = await review_id(rt, debate_id)
    url = f"{base}/api/reviews/{rid}/decision"
    async with aiohttp.ClientSession() as s:
        status, listing = await call(s, "GET", f"{base}/api/reviews", headers=API)
        assert status == 200 and [r["id"] for r in listing["reviews"]] == [rid]
        status, body = await call(s, "POST", url, json={"decision": "approve"}, headers=API)
        assert status == 403 and "reviewer's identity" in body["error"]
        status, body = await call(s, "POST", url, json={"decision": "approve"},
                                  headers=as_reviewer(settings, OUTSIDER))
        assert status == 403 and body["error"].startswith(
            f"{OUTSIDER} is not a configured reviewer")   # the token opens nothing at all
        mine = as_reviewer(settings, REVIEWER)
        status, body = await call(s, "POST", url, json={"decision": "escalate"}, headers=mine)
        assert status == 400 and body["error"].startswith("say why you escalate")
        for invisible in ("\u200b", " \u2060\ufeff\u00ad\u202e ", "\u3164\u2800\ufe0f"):
            status, body = await call(s, "POST", url, json={"decision": "escalate",
                                                            "reason": invisible}, headers=mine)
            assert status == 400 and body["error"].startswith("say why you escalate"), body
        status, body = await call(s, "POST", url, json={"decision": "escalate",
                                                        "reason": "stale \udfff"}, headers=mine)
        assert status == 400 and "surrogate" in body["error"], body   # the JSON itself refused
        status, body = await call(s, "POST", url, json={"decision": "maybe"}, headers=mine)
        assert status == 400 and body["error"].startswith("decision: Input should be")
        status, body = await call(s, "POST", url, json={"decision": "approve",
                                                        "reason": "reads fine"}, headers=mine)
        assert status == 200 and body["status"] == "approved" and body["rerun_id"] is None
        assert body["review"]["decided_by"] == REVIEWER
        status, body = await call(s, "POST", url, json={"decision": "rerun"}, headers=mine)
        assert status == 409 and body["error"] == f"already decided (approved by {REVIEWER})"
        status, body = await call(s, "POST", f"{base}/api/reviews/nope/decision",
                                  json={"decision": "approve"}, headers=mine)
        assert status == 404
    assert ("review_decided", REVIEWER) in await audited(rt, debate_id)
    assert (await rt.service.get(debate_id)).status is DebateStatus.APPROVED


async def test_a_decision_says_what_it_is_about_and_who_should_have_won(stack: Stack) -> None:
    base, rt, settings = stack
    debate_id = await awaiting_review(rt)
    url = f"{base}/api/reviews/{await review_id(rt, debate_id)}/decision"
    mine = as_reviewer(settings, REVIEWER)
    async with aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", url, headers=mine, json={
            "decision": "escalate", "reason": "x", "about": "mood"})
        assert status == 400 and body["error"].startswith("about:")
        status, body = await call(s, "POST", url, headers=mine, json={
            "decision": "escalate", "reason": "the source was down", "about": "process",
            "winner": "con"})
    assert status == 200
    assert (body["review"]["about"], body["review"]["named_winner"]) == ("process", "con")
    assert body["review"]["spot_check"] is False


@pytest.mark.parametrize("grant", ["", "not-a-grant", "expired", "old-token"])
async def test_a_forged_or_expired_reviewer_token_opens_nothing(stack: Stack,
                                                                grant: str) -> None:
    base, _, settings = stack
    if grant == "expired":
        grant = reviewer_grant(settings.service, REVIEWER, seconds=1, clock=lambda: 0.0)
    if grant == "old-token":   # issued before DIALECTIC_API_TOKEN changed
        grant = reviewer_grant(rehearsal_settings(api_token="the-token-before").service, REVIEWER)
    async with aiohttp.ClientSession() as s:
        status, _ = await call(s, "POST", f"{base}/api/reviews/r1/decision",
                               json={"decision": "approve"},
                               headers={"Authorization": f"Bearer {grant}"})
        assert status == 401
        async with s.get(f"{base}/signin/link", params={"grant": grant}) as page:
            assert page.status == 403 and "dialectic_session" not in page.cookies
            assert "not valid or has expired" in await page.text()


async def test_a_re_run_decision_starts_a_new_debate(stack: Stack) -> None:
    base, rt, settings = stack
    debate_id = await awaiting_review(rt)
    rid = await review_id(rt, debate_id)
    async with aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", f"{base}/api/reviews/{rid}/decision",
                                  json={"decision": "rerun"},
                                  headers=as_reviewer(settings, REVIEWER))
    assert status == 200 and body["status"] == "escalated" and body["rerun_id"]
    rerun = await rt.service.get(body["rerun_id"])
    assert rerun.parent_id == debate_id and rerun.requested_by == REVIEWER


async def _session(s: aiohttp.ClientSession, base: str, path: str, **kw: Any) -> str:
    """Follow a sign-in to its page; the text of the page it lands on."""
    async with s.get(f"{base}{path}", **kw) as page:
        assert page.status == 200, await page.text()
        return await page.text()


async def sign_in_by_link(s: aiohttp.ClientSession, base: str, grant: str, *,
                          to: str = "/reviews") -> str:
    """Open a reviewer link and press its button, as a browser does; the page it lands on."""
    page = await _session(s, base, "/signin/link", params={"grant": grant, "to": to})
    assert "dialectic_session" not in {c.key for c in s.cookie_jar}   # the GET signs nobody in
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))
    assert set(fields) == {"grant", "to"}, page
    async with s.post(f"{base}/signin/link", data={k: html.unescape(v)
                                                   for k, v in fields.items()}) as done:
        assert done.status == 200, await done.text()
        return await done.text()


async def test_a_reviewer_link_begins_a_session_that_decides(stack: Stack) -> None:
    base, rt, settings = stack
    debate_id = await awaiting_review(rt)
    rid = await review_id(rt, debate_id)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        text = await sign_in_by_link(s, base, reviewer_grant(settings.service, REVIEWER),
                                     to="//evil.example/x")
        assert f"signed in as reviewer <b>{REVIEWER}</b>" in text
        assert 'url=/"' in text                      # never off-site after signing in
        queue = await _session(s, base, "/reviews")
        assert f'href="/debates/{debate_id}"' in queue and "sign in as a reviewer" not in queue
        page = await _session(s, base, f"/debates/{debate_id}")
        assert f'data-review="{rid}"' in page and 'value="escalate"' in page
        status, body = await call(s, "POST", f"{base}/api/reviews/{rid}/decision",
                                  json={"decision": "escalate", "reason": "policy unclear"})
        assert status == 200 and body["review"]["decision_note"] == "policy unclear"
        page = await _session(s, base, f"/debates/{debate_id}")
        assert f"Decided: <b>escalated</b> by {REVIEWER}" in page
        async with s.post(f"{base}/signout", allow_redirects=False) as out:
            assert out.status == 303
        assert "Sign in to the console" in await _session(s, base, "/")


async def test_sign_in_with_slack_names_the_reviewer_by_slack_identity(stack: Stack) -> None:
    base, rt, _ = stack
    debate_id = await awaiting_review(rt)
    async with FakeSlack() as slack:
        slack.oidc_client("1234.5678", "client-secret")
        slack.set_usergroup("S1", [GROUP_MEMBER])
        client = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
        slack_settings = SlackSettings(slack_bot_token="xoxb-test", slack_app_token="xapp-1",
                                       slack_api_url=slack.base_url, slack_client_id="1234.5678",
                                       slack_client_secret="client-secret")
        rt.sign_in = SlackSignIn(slack_settings)
        rt.reviews.reviewers.directory = SlackUserGroups(client)
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as s:
            slack.sign_in_as(None)                  # the person cancels at Slack
            async with s.get(f"{base}/signin/slack") as refused:
                assert refused.status == 403 and "access_denied" in await refused.text()
            slack.sign_in_as(GROUP_MEMBER)
            text = await _session(s, base, "/signin/slack", params={"to": "/reviews"})
            assert f"signed in as reviewer <b>{GROUP_MEMBER}</b>" in text
            rid = await review_id(rt, debate_id)
            status, body = await call(s, "POST", f"{base}/api/reviews/{rid}/decision",
                                      json={"decision": "approve"})
            assert status == 200 and body["review"]["decided_by"] == GROUP_MEMBER
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
            async with s.get(f"{base}/signin/slack/callback",
                             params={"code": "stolen", "state": "guess"}) as forged:
                assert forged.status == 400     # no round trip began in this browser
    assert ("review_decided", GROUP_MEMBER) in await audited(rt, debate_id)


async def test_taking_a_reviewer_off_the_list_ends_what_their_link_decides(
        sqlite_db: Database) -> None:
    """Membership is checked at each use: a link issued while UREV was a reviewer, used after
    the service restarted without UREV in DIALECTIC_REVIEWERS, opens nothing."""
    port = free_port()
    before = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER,
                                public_url=f"http://127.0.0.1:{port}")
    link = as_reviewer(before, REVIEWER)
    after = rehearsal_settings(api_token=TOKEN, reviewers="UOTHER",
                               public_url=f"http://127.0.0.1:{port}")
    async with served(sqlite_db, after, port=port) as (base, rt, _):
        debate_id = await awaiting_review(rt)
        rid = await review_id(rt, debate_id)
        async with aiohttp.ClientSession() as s:
            status, body = await call(s, "POST", f"{base.rstrip('/')}/api/reviews/{rid}/decision",
                                      json={"decision": "approve"}, headers=link)
        assert status == 403
        assert body["error"].startswith(f"{REVIEWER} is not a configured reviewer")
        assert (await rt.service.get(debate_id)).status is DebateStatus.AWAITING_REVIEW
