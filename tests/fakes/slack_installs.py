"""The fake Slack's "Add to Slack" (OAuth v2): the authorize page, where an admin of the workspace
set by `install_as` approves at once, and `oauth.v2.access`, which checks the app's client
credentials (HTTP Basic, as slack_sdk sends them), takes each code once and issues a bot token of
that workspace. Calls made with an issued token answer as that workspace (`auth.test`) and are
recorded with its team (`Call.team`); the token itself is never recorded."""

from __future__ import annotations

import base64
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from tests.fakes.slack_requests import Args, Call, CallLog, Reply, err, ok


@dataclass(frozen=True)
class Install:
    """A workspace (or, org-wide, an Enterprise Grid organisation) the app is installed in."""

    team_id: str | None
    enterprise_id: str | None = None
    org_wide: bool = False
    user_id: str = "UINSTALLER"

    @property
    def key(self) -> str:
        return self.team_id or self.enterprise_id or "?"


class SlackInstalls(CallLog):
    """The OAuth v2 half of the fake Slack."""

    def __init__(self) -> None:
        super().__init__()
        self._app: tuple[str, str] | None = None
        self._installing: Install | None = None
        self._grants: dict[str, tuple[Install, str]] = {}
        self.issued: dict[str, Install] = {}       # bot token -> its installation

    def oauth_app(self, client_id: str, client_secret: str) -> None:
        """The app's OAuth client: `oauth.v2.access` accepts only these credentials."""
        self._app = (client_id, client_secret)

    def install_as(self, install: Install | None) -> None:
        """Who approves at the authorize page next (None: the admin cancels)."""
        self._installing = install

    def revoke(self, token: str) -> None:
        """The token stops working (what Slack does on uninstall)."""
        self.issued.pop(token, None)

    def token_of(self, team_id: str) -> str | None:
        return next((t for t, i in self.issued.items() if i.key == team_id), None)

    async def _handle_oauth_authorize(self, request: web.Request) -> web.Response:
        q = request.query
        await self._record(Call("oauth.v2.authorize", dict(q), time.time()))
        if self._app is None or q.get("client_id") != self._app[0]:
            return web.Response(status=400, text="invalid_client_id")
        if self._installing is None:
            answer = {"error": "access_denied", "state": q.get("state", "")}
        else:
            code = secrets.token_urlsafe(12)
            self._grants[code] = (self._installing, q.get("redirect_uri", ""))
            answer = {"code": code, "state": q.get("state", "")}
        raise web.HTTPFound(f"{q.get('redirect_uri', '')}?{urlencode(answer)}")

    def _oauth_access(self, args: Args, auth: str) -> Reply:
        expected = base64.b64encode(":".join(self._app or ("", "")).encode()).decode()
        if self._app is None or auth != f"Basic {expected}":
            return err("invalid_client_id")
        grant = self._grants.pop(str(args.get("code", "")), None)
        if grant is None:
            return err("invalid_code")
        install, redirect_uri = grant
        if redirect_uri and redirect_uri != args.get("redirect_uri"):
            return err("bad_redirect_uri")
        token = f"xoxb-{install.key}-{secrets.token_hex(12)}"
        self.issued[token] = install
        org = {"id": install.enterprise_id, "name": "Fake Org"} if install.enterprise_id else None
        team = None if install.org_wide else {"id": install.team_id, "name": "Team"}
        return ok(app_id="A0FAKE", authed_user={"id": install.user_id}, token_type="bot",
                  access_token=token, bot_user_id=f"UBOT{install.key}",
                  scope="commands,chat:write", team=team, enterprise=org,
                  is_enterprise_install=install.org_wide)

    def installed_auth_test(self, token: str) -> Reply | None:
        """auth.test for an issued token: its workspace's identity."""
        install = self.issued.get(token)
        if install is None:
            return None
        org = {"enterprise_id": install.enterprise_id} if install.enterprise_id else {}
        return ok(url="https://fake.slack.com/", team="Team", user="dialectic",
                  team_id=install.team_id, user_id=f"UBOT{install.key}",
                  bot_id=f"B{install.key}", is_enterprise_install=install.org_wide, **org)
