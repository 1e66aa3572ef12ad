"""Two installed workspaces and an uninstalled third, each with a debate waiting for review,
beside one of the operator's, on the whole stack (the real Bolt app's "Add to Slack", the
console and API on one aiohttp server, the fake Slack, SQLite or PostgreSQL), and the ways a
person of each signs in: a reviewer link (`issue_reviewer_grant`, what `dialectic reviewers
link --team` calls), or Sign in with Slack (the fake's OpenID Connect, its id_token naming the
workspace).

    async with workspace_world(tmp_path, db) as w:
        async with w.browser() as s:
            await w.sign_in_by_link(s, w.links[T1])
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from bot.service.sessions import issue_reviewer_grant
from storage import debates, reviews
from storage.db import Database
from storage.records import DebateStatus, Origin
from storage.tenancy import Workspace
from tests.fakes.slack_installs import Install
from tests.integration.test_slack_install import (
    CLIENT_ID,
    CLIENT_SECRET,
    KEY,
    T1,
    T2,
    home_opened,
    install,
    multi,
)
from tests.support.slack_fixtures import Harness
from tests.support.storage_fixtures import make_record

__all__ = ["CLIENT_ID", "CLIENT_SECRET", "COOKIE", "KEY", "OPERATOR", "T1", "T2", "T3",
           "TOKEN", "World", "workspace_world"]

T3 = "T3GONE"
OPERATOR = "operator"
TOKEN = "workspace-sessions-token-0123456789"
COOKIE = "dialectic_session"
#: each workspace's own reviewers (T3 set none: the operator's, UOPER, are its reviewers)
REVIEWERS = {T1: "UREV1", T2: "UREV2"}


@dataclass
class World:
    h: Harness
    base: str
    debates: dict[str, str] = field(default_factory=dict)    # owner -> debate id
    reviews: dict[str, str] = field(default_factory=dict)    # owner -> its pending review
    links: dict[str, str] = field(default_factory=dict)      # workspace -> a reviewer token
    t3_cookie: str = ""     # a session T3's reviewer began before T3 uninstalled the app

    def topic(self, owner: str) -> str:
        return f"Should the {owner} team adopt Kafka?"

    @asynccontextmanager
    async def browser(self, cookie: str = "") -> AsyncIterator[aiohttp.ClientSession]:
        jar = aiohttp.CookieJar(unsafe=True)
        headers = {"Cookie": f"{COOKIE}={cookie}"} if cookie else None
        async with aiohttp.ClientSession(cookie_jar=jar, headers=headers) as s:
            yield s

    async def sign_in_by_link(self, s: aiohttp.ClientSession, grant: str) -> tuple[int, str]:
        """Open a reviewer link and press its button (the page's form, same origin)."""
        async with s.post(f"{self.base}/signin/link", data={"grant": grant, "to": "/"}) as done:
            return done.status, await done.text()

    async def sign_in_with_slack(self, s: aiohttp.ClientSession, user: str, team: str,
                                 enterprise: str | None = None) -> tuple[int, str]:
        """Our /signin/slack, Slack's authorize page (the fake consents as `user` of `team`),
        and back to our callback, as a browser follows them."""
        self.h.fake.sign_in_as(user, team_id=team, enterprise_id=enterprise)
        async with s.get(f"{self.base}/signin/slack", allow_redirects=False) as to_slack:
            authorize = to_slack.headers["Location"]
        async with s.get(authorize, allow_redirects=False) as from_slack:
            back = urlsplit(from_slack.headers["Location"])   # the public URL's callback
        async with s.get(f"{self.base}{back.path}?{back.query}") as landed:
            return landed.status, await landed.text()

    async def uninstall(self, team: str) -> None:
        """Slack's `app_uninstalled` event, signed, through the Bolt app."""
        body = json.loads(home_opened(team))
        body["event"], body["event_id"] = {"type": "app_uninstalled"}, f"EvGone{team}"
        assert (await self.h.send(json.dumps(body), "application/json")).status == 200

        async def gone() -> bool:
            assert self.h.rt.workspaces is not None
            return await self.h.rt.workspaces.installed(team_id=team, enterprise_id=None) is None

        await self.h.wait_until(gone, what=f"{team} uninstalled")

    async def set_reviewers(self, team: str, reviewers: str) -> None:
        """The operator sets the workspace's own reviewers (the API, with the token)."""
        async with self.h.http.post(f"{self.base}/api/workspaces/{team}/settings",
                                    json={"reviewers": reviewers},
                                    headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
            assert resp.status == 200, await resp.text()

    async def link(self, user: str, team: str) -> str:
        rt = self.h.rt
        return await issue_reviewer_grant(rt.settings, rt.reviews, user,
                                          workspaces=rt.workspaces, workspace=Workspace(team))


async def _seed(w: World, owner: str) -> None:
    """A debate waiting for review: started in `owner`'s workspace, or the operator's (API)."""
    team = None if owner == OPERATOR else owner
    origin = (Origin(surface="slack", team_id=team, channel_id="CGENERAL", thread_ts="1.0")
              if team else Origin(surface="api"))
    record = make_record(w.topic(owner), status=DebateStatus.AWAITING_REVIEW).model_copy(
        update={"origin": origin})
    async with w.h.rt.db.transaction() as session:
        created = await debates.create(session, record=record, topic_key=f"key-{owner}")
        review = await reviews.create(session, debate_id=created.id, reason="judges split")
    w.debates[owner], w.reviews[owner] = created.id, review.id


@asynccontextmanager
async def workspace_world(tmp_path: Path, db: Database, **more: Any) -> AsyncIterator[World]:
    """T1 and T2 installed with their own reviewers, T3 installed (reviewers: the operator's),
    a reviewer link of each issued and a T3 session begun, then T3 uninstalled."""
    url = db.url.render_as_string(hide_password=False)
    async with multi(tmp_path, database_url=url, api_token=TOKEN, reviewers=("UOPER",),
                     **more) as h:
        h.fake.oidc_client(CLIENT_ID, CLIENT_SECRET)
        w = World(h, str(h.server.make_url("/")).rstrip("/"))
        for team in (T1, T2, T3):
            assert (await install(h, Install(team))).status == 200
        for team, reviewer in REVIEWERS.items():
            await w.set_reviewers(team, reviewer)
        for owner in (T1, T2, T3, OPERATOR):
            await _seed(w, owner)
        w.links = {T1: await w.link("UREV1", T1), T2: await w.link("UREV2", T2),
                   T3: await w.link("UOPER", T3)}
        async with w.browser() as s:
            assert (await w.sign_in_by_link(s, w.links[T3]))[0] == 200
            w.t3_cookie = next(c.value for c in s.cookie_jar if c.key == COOKIE)
        await w.uninstall(T3)
        yield w
