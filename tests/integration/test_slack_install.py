"""Multi-workspace mode through the real Bolt app and the fake Slack: "Add to Slack" for real
(the install page, the state cookie, Slack's authorize page, the callback exchanging the code at
`oauth.v2.access`), the installation stored with its token encrypted (never in clear in the
database), a signed event from each installed workspace answered with that workspace's own token,
an uninstalled or never-installed workspace refused, and Enterprise Grid org-wide installs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from tests.fakes.slack_installs import Install
from tests.support.slack_fixtures import Harness, slack_harness

pytestmark = pytest.mark.integration

CLIENT_ID = "1111.2222"
CLIENT_SECRET = "oauth-client-secret"
KEY = Fernet.generate_key().decode()
OLD_KEY = Fernet.generate_key().decode()
T1, T2, T3 = "T1ONE", "T2TWO", "T3NEVER"


def multi(tmp_path: Path, workers: int | None = 0, **more: Any) -> Any:
    values = {"slack_bot_token": None, "slack_client_id": CLIENT_ID,
              "slack_client_secret": CLIENT_SECRET, "token_keys": KEY, **more}
    return slack_harness(tmp_path, workers=workers, **values)


async def install(h: Harness, who: Install) -> aiohttp.ClientResponse:
    """The browser's round trip: our install page, Slack's authorize page, our callback."""
    h.fake.oauth_app(CLIENT_ID, CLIENT_SECRET)
    h.fake.install_as(who)
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        page = await browser.get(str(h.server.make_url("/slack/install")))
        assert page.status == 200
        # the state cookie is Secure (the service is served over https); this browser talks
        # plain http on loopback, so it carries the cookie itself
        cookie = page.headers["Set-Cookie"].split(";")[0]
        assert "Secure" in page.headers["Set-Cookie"]
        found = re.search(r'href="([^"]+/oauth/v2/authorize[^"]+)"', await page.text())
        assert found, "the install page links to Slack's authorize page"
        authorize = found.group(1).replace("&amp;", "&")
        query = parse_qs(urlsplit(authorize).query)
        assert query["client_id"] == [CLIENT_ID] and "chat:write" in query["scope"][0]
        slack = await browser.get(authorize, allow_redirects=False)
        back = urlsplit(slack.headers["Location"])
        assert back.path == "/slack/oauth_redirect"
        callback = await browser.get(str(h.server.make_url(f"{back.path}?{back.query}")),
                                     allow_redirects=False, headers={"Cookie": cookie})
        await callback.read()
        return callback


async def rows(h: Harness, table: str) -> list[dict[str, Any]]:
    async with h.rt.db.engine.connect() as conn:
        result = await conn.execute(text(f"SELECT * FROM {table}"))
        return [dict(r) for r in result.mappings()]


def home_opened(team: str, user: str = "UALICE", enterprise: str | None = None) -> str:
    body = {"token": "legacy", "team_id": team, "api_app_id": "A0FAKE", "type": "event_callback",
            "event_id": f"Ev{team}{user}", "event_time": 1,
            "event": {"type": "app_home_opened", "user": user, "tab": "home",
                      "channel": "D0HOME"},
            "authorizations": [{"team_id": team, "enterprise_id": enterprise,
                                "user_id": "UBOT", "is_bot": True,
                                "is_enterprise_install": bool(enterprise)}]}
    if enterprise:   # the tests' organisations installed org-wide, as Slack then says
        body["enterprise_id"] = enterprise
        body["is_enterprise_install"] = True
    return json.dumps(body)


async def publishes(h: Harness) -> list[str]:
    """The team whose installed token made each views.publish, in order."""
    return [c.team for c in h.fake.calls_to("views.publish")]


async def test_install_stores_an_encrypted_token_and_answers_with_it(tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        done = await install(h, Install(T1))
        assert done.status == 200, await done.text()
        assert h.fake.calls_to("oauth.v2.access")[-1].ok
        token = h.fake.token_of(T1)
        assert token is not None
        for table in ("slack_installations", "slack_bots"):
            stored = await rows(h, table)
            assert len(stored) == 1 and stored[0]["team_id"] == T1
            assert token not in json.dumps(stored, default=str)     # never in clear
            assert Fernet(KEY.encode()).decrypt(stored[0]["bot_token"].encode()).decode() == token
        assert await rows(h, "slack_oauth_states") == []             # the state was used once

        reply = await h.send(home_opened(T1), "application/json")
        assert reply.status == 200
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="views.publish")
        assert await publishes(h) == [T1]


async def test_each_workspace_is_answered_with_its_own_token_and_others_get_nothing(
        tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        for team in (T1, T2):
            assert (await install(h, Install(team))).status == 200
        for team in (T2, T1):
            assert (await h.send(home_opened(team), "application/json")).status == 200
        await h.wait_until(lambda: len(h.fake.calls_to("views.publish")) == 2, what="2 homes")
        assert sorted(await publishes(h)) == [T1, T2]
        before = len(h.fake.calls)
        reply = await h.send(home_opened(T3), "application/json")   # never installed
        assert reply.status == 200 and reply.text == ""
        assert len(h.fake.calls) == before


async def test_a_state_not_issued_here_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        url = h.server.make_url("/slack/oauth_redirect?code=forged&state=forged")
        async with h.http.get(str(url)) as reply:
            assert reply.status == 400
        assert h.fake.calls_to("oauth.v2.access") == []
        assert await rows(h, "slack_bots") == []


async def test_uninstall_removes_the_tokens_and_the_workspace_is_refused_after(
        tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        for team in (T1, T2):
            await install(h, Install(team))
        uninstall = json.loads(home_opened(T1))
        uninstall["event"] = {"type": "app_uninstalled"}
        uninstall["event_id"] = "EvUninstall"
        assert (await h.send(json.dumps(uninstall), "application/json")).status == 200
        await h.wait_until(lambda: _teams(h, "slack_installations", {T2}), what="T1 gone")
        assert [r["team_id"] for r in await rows(h, "slack_bots")] == [T2]
        reply = await h.send(home_opened(T1, "UBOB"), "application/json")
        assert reply.status == 200 and reply.text == ""
        assert (await h.send(home_opened(T2), "application/json")).status == 200
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="T2's home")
        assert await publishes(h) == [T2]


async def test_a_revoked_bot_token_removes_the_workspaces_tokens(tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        await install(h, Install(T1))
        revoked = json.loads(home_opened(T1))
        revoked["event"] = {"type": "tokens_revoked", "tokens": {"bot": ["UBOTT1ONE"]}}
        revoked["event_id"] = "EvRevoked"
        assert (await h.send(json.dumps(revoked), "application/json")).status == 200
        await h.wait_until(lambda: _teams(h, "slack_installations", set()), what="T1 gone")
        assert await rows(h, "slack_bots") == []


async def test_an_org_wide_install_covers_every_workspace_of_its_organisation(
        tmp_path: Path) -> None:
    async with multi(tmp_path) as h:
        done = await install(h, Install(None, enterprise_id="E1ORG", org_wide=True))
        assert done.status == 200, await done.text()
        stored = await rows(h, "slack_bots")
        assert stored[0]["enterprise_id"] == "E1ORG" and stored[0]["is_enterprise_install"]
        assert stored[0]["team_id"] is None
        reply = await h.send(home_opened("T5INORG", enterprise="E1ORG"), "application/json")
        assert reply.status == 200
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="the org's home")
        assert await publishes(h) == ["E1ORG"]
        before = len(h.fake.calls)
        other_org = await h.send(home_opened("T6", "UX", enterprise="E2OTHER"),
                                 "application/json")
        assert other_org.status == 200 and len(h.fake.calls) == before


async def test_a_rotated_key_still_opens_tokens_sealed_with_the_old_one(tmp_path: Path) -> None:
    async with multi(tmp_path, token_keys=OLD_KEY) as h:
        await install(h, Install(T1))
        token = h.fake.token_of(T1)
    async with multi(tmp_path, token_keys=f"{KEY},{OLD_KEY}") as h:
        h.fake.issued[str(token)] = Install(T1)    # the same Slack, seen by a new fake
        assert (await h.send(home_opened(T1), "application/json")).status == 200
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="T1's home")
        assert await publishes(h) == [T1]


async def _teams(h: Harness, table: str, teams: set[str]) -> bool:
    return {r["team_id"] for r in await rows(h, table)} == teams


def command_from(h: Harness, team: str, topic: str) -> str:
    fields = dict(pair.split("=", 1) for pair in h.command_body(topic).split("&"))
    fields["team_id"] = team
    return "&".join(f"{k}={v}" for k, v in fields.items())


async def test_a_debate_posts_everything_with_its_workspaces_token(tmp_path: Path) -> None:
    """The command's answer, the thread's status and phase replies (a worker), the result and
    the review request (the outbox dispatcher): every Slack call with the debate's workspace's
    token, none with another's or with none."""
    async with multi(tmp_path, workers=None) as h:
        for team in (T1, T2):
            await install(h, Install(team))
        h.fake.calls.clear()
        reply = await h.send(command_from(h, T2, "Should we adopt Kafka?"),
                             "application/x-www-form-urlencoded")
        assert reply.status == 200 and "Estimate" in reply.text, reply.text
        debate = await h.one_debate()
        await h.wait_finished(debate.id)
        root = h.fake.messages("CGENERAL")[0]
        await h.wait_reply("CGENERAL", root["ts"], "[Rehearsal] Debate result")
        posting = [c for c in h.fake.calls
                   if c.method.startswith(("chat.", "assistant.", "views.", "reactions."))]
        assert posting and {c.team for c in posting} == {T2}, [
            (c.method, c.team, c.response.get("error")) for c in posting]
        assert all(c.ok for c in posting)
