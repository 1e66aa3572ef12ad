"""Sign in with Slack (OpenID Connect) for the web console: the service's `IdentityProvider`
(bot/service/grants.py), so a reviewer's identity in the browser is their Slack user id, checked
against the same reviewer list and user groups as the review buttons.

The browser goes to Slack's authorize page; Slack sends it back with a code, which
`openid.connect.token` exchanges for an ID token. The token comes straight from Slack over the
Web API's connection, so its claims are read without checking a signature (OpenID Connect Core
3.1.3.7); its nonce must be the one this browser's round trip carries. It names the workspace
the person signed in with (`https://slack.com/team_id`, and `https://slack.com/enterprise_id` in
an Enterprise Grid organisation). With a bot token that workspace must be the bot's own, as the
token's `auth.test` names it (asked once): someone from another workspace is refused however the
app's OAuth client is distributed. In multi-workspace mode (no bot token) the workspace is
returned with the person; the console begins a session of that workspace only if it is installed
and they review or administer it (bot/service/sessions.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import Any
from urllib.parse import urlencode

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.grants import Person, SignInFailed
from bot.slack.client import basic_auth
from bot.slack.settings import SlackSettings

log = logging.getLogger("dialectic.slack.signin")

USER_CLAIM = "https://slack.com/user_id"
TEAM_CLAIM = "https://slack.com/team_id"
ENTERPRISE_CLAIM = "https://slack.com/enterprise_id"
SCOPES = "openid profile"


def authorize_base(api_url: str) -> str:
    """Slack's authorize page, beside its Web API: https://slack.com/openid/connect/authorize."""
    root = api_url.rstrip("/").removesuffix("/api")
    return f"{root}/openid/connect/authorize"


def id_token_claims(token: Any) -> dict[str, Any]:
    """The claims of a JWT's payload (no signature check: see the module docstring)."""
    try:
        payload = str(token).split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        raise SignInFailed("Slack's answer carried no readable identity") from None
    if not isinstance(claims, dict):
        raise SignInFailed("Slack's answer carried no readable identity")
    return claims


class SlackSignIn:
    """The console's "Sign in with Slack"."""

    label = "Slack"

    def __init__(self, settings: SlackSettings, client: AsyncWebClient | None = None, *,
                 bot: AsyncWebClient | None = None) -> None:
        if settings.slack_client_id is None or settings.slack_client_secret is None:
            raise ValueError("Sign in with Slack needs SLACK_CLIENT_ID and SLACK_CLIENT_SECRET")
        # no bot token: the token exchange authenticates as the app's OAuth client
        self.client = client or AsyncWebClient(base_url=settings.slack_api_url)
        # the bot's client: which workspace this service belongs to (auth.test); None in
        # multi-workspace mode, where the person's workspace is the console's to check
        self.bot = bot if bot is not None or settings.slack_bot_token is None else \
            AsyncWebClient(token=settings.slack_bot_token.get_secret_value(),
                           base_url=settings.slack_api_url)
        self.team_id: str | None = None
        self.client_id = settings.slack_client_id
        self.client_secret = settings.slack_client_secret.get_secret_value()
        self.authorize = authorize_base(settings.slack_api_url)

    def authorize_url(self, *, state: str, nonce: str, redirect_uri: str) -> str:
        query = urlencode({"response_type": "code", "scope": SCOPES, "client_id": self.client_id,
                           "state": state, "nonce": nonce, "redirect_uri": redirect_uri})
        return f"{self.authorize}?{query}"

    async def identify(self, *, code: str, redirect_uri: str, nonce: str) -> Person:
        # the client's credentials as HTTP Basic, by hand (client.py `basic_auth`)
        try:
            reply = await self.client.api_call(
                "openid.connect.token", data={"code": code, "redirect_uri": redirect_uri},
                headers=basic_auth(self.client_id, self.client_secret))
        except SlackApiError as exc:
            raise SignInFailed(f"Slack refused the sign-in "
                               f"({exc.response.get('error', 'error')}): try again") from None
        except (ClientError, TimeoutError) as exc:
            log.warning("Sign in with Slack: could not reach Slack (%s)", type(exc).__name__)
            raise SignInFailed("Slack could not be reached to sign you in: try again") from None
        claims = id_token_claims(reply.get("id_token"))
        if claims.get("nonce") != nonce:
            raise SignInFailed("that sign-in answer was not for this browser: try again")
        user = claims.get(USER_CLAIM) or claims.get("sub")
        if not isinstance(user, str) or not user:
            raise SignInFailed("Slack's answer named nobody")
        team, enterprise = claims.get(TEAM_CLAIM), claims.get(ENTERPRISE_CLAIM) or ""
        if not isinstance(team, str) or not team or not isinstance(enterprise, str):
            raise SignInFailed("Slack's answer named no workspace")
        if self.bot is not None and team != await self.workspace():
            raise SignInFailed("you signed in to another Slack workspace than this service's: "
                               "sign in with your account in its workspace")
        return Person(user, team, enterprise)

    async def workspace(self) -> str:
        """The bot's workspace (team id), asked of Slack once; SignInFailed if it cannot be."""
        if self.team_id is None:
            assert self.bot is not None
            try:
                reply = await self.bot.auth_test()
            except SlackApiError as exc:
                log.warning("Sign in with Slack: auth.test refused (%s)",
                            exc.response.get("error", "error"))
                raise SignInFailed("this service could not check its Slack workspace: "
                                   "try again later") from None
            except (ClientError, TimeoutError) as exc:
                log.warning("Sign in with Slack: could not reach Slack (%s)", type(exc).__name__)
                raise SignInFailed("Slack could not be reached to sign you in: try again") from None
            team = reply.get("team_id")
            if not isinstance(team, str) or not team:
                raise SignInFailed("this service could not check its Slack workspace: "
                                   "try again later")
            self.team_id = team
        return self.team_id


__all__ = ["SlackSignIn", "authorize_base", "id_token_claims"]
