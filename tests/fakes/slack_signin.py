"""The fake Slack's Sign in with Slack (OpenID Connect): the authorize page, where the person
set by `sign_in_as` consents at once (or cancels), and `openid.connect.token`, which checks the
client's Basic credentials and takes each code once."""

from __future__ import annotations

import base64
import json
import secrets
import time
from urllib.parse import urlencode

from aiohttp import web

from tests.fakes.slack_requests import Args, Call, CallLog, Reply, err, ok


class SlackSignIn(CallLog):
    """The OpenID provider half of the fake Slack."""

    team_id: str

    def __init__(self) -> None:
        super().__init__()
        self._oidc: tuple[str, str] | None = None          # (client id, secret)
        self._consenting: str | None = None                # who signs in at the authorize page
        self._consenting_team: str | None = None           # from which workspace (None: this)
        self._consenting_org: str | None = None            # its Grid organisation, if any
        self._codes: dict[str, dict[str, str]] = {}

    def oidc_client(self, client_id: str, client_secret: str) -> None:
        """The app's OAuth client: `openid.connect.token` accepts only these credentials."""
        self._oidc = (client_id, client_secret)

    def sign_in_as(self, user_id: str | None, *, team_id: str | None = None,
                   enterprise_id: str | None = None) -> None:
        """Who consents at the authorize page (None: the person cancels), signed in to
        `team_id` (None: this workspace; another one's id, as a person of another workspace
        gets from Slack's authorize page when the app is distributed), of the Enterprise Grid
        organisation `enterprise_id` (None: a workspace of no organisation)."""
        self._consenting, self._consenting_team = user_id, team_id
        self._consenting_org = enterprise_id

    async def _handle_authorize(self, request: web.Request) -> web.Response:
        """Slack's sign-in page, consenting (or not) at once: back to redirect_uri."""
        q = request.query
        await self._record(Call("openid.connect.authorize", dict(q), time.time()))
        if self._oidc is None or q.get("client_id") != self._oidc[0]:
            return web.Response(status=400, text="invalid_client_id")
        if self._consenting is None:
            answer = {"error": "access_denied", "state": q.get("state", "")}
        else:
            code = secrets.token_urlsafe(12)
            self._codes[code] = {"user": self._consenting, "nonce": q.get("nonce", ""),
                                 "redirect_uri": q.get("redirect_uri", ""),
                                 "team": self._consenting_team or self.team_id,
                                 "enterprise": self._consenting_org or ""}
            answer = {"code": code, "state": q.get("state", "")}
        raise web.HTTPFound(f"{q.get('redirect_uri', '')}?{urlencode(answer)}")

    def _oidc_token(self, args: Args, auth: str) -> Reply:
        """openid.connect.token: the client's Basic credentials, a code used once."""
        expected = base64.b64encode(":".join(self._oidc or ("", "")).encode()).decode()
        if self._oidc is None or auth != f"Basic {expected}":
            return err("invalid_client")
        grant = self._codes.pop(str(args.get("code", "")), None)
        if grant is None:
            return err("invalid_code")
        if grant["redirect_uri"] != args.get("redirect_uri"):
            return err("bad_redirect_uri")
        claims = {"iss": "https://slack.com", "sub": grant["user"], "aud": self._oidc[0],
                  "nonce": grant["nonce"], "https://slack.com/user_id": grant["user"],
                  "https://slack.com/team_id": grant["team"]}
        if grant["enterprise"]:   # Slack names the organisation of a Grid workspace too
            claims["https://slack.com/enterprise_id"] = grant["enterprise"]
        part = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return ok(access_token="xoxp-signin", token_type="Bearer",
                  id_token=f"eyJhbGciOiJub25lIn0.{part}.")
