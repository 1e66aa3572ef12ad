"""Which installed workspace a Slack request belongs to, and the refusal of every other one.

Slack signs the requests of every workspace an app is installed in with the same signing
secret, so a valid signature says "from Slack", not "from our workspace". Before any listener
runs (and before anything is deduplicated, stored or charged), `gate` asks `Installed` whether
the workspace the request was delivered to is installed: the request's `team_id` and
`enterprise_id` as Bolt reads them for its own authorisation (`authorizations[0]` of an event,
so an event in a Slack Connect channel of the installed workspace is that workspace's, whoever's
user wrote it; `view.app_installed_team_id` of a view submission; `team.id` of an interaction).
Anything else is acknowledged with an empty 200 (Slack does not retry it) and ignored with one
log line; a request with no team at all is refused the same way. The `Workspace` it establishes
is what every listener reads (`workspace_of`), never a team id of its own parsing.

Single-token mode: one workspace is installed, the bot token's, from `auth.test`, asked once
(`Installed`). Multi-workspace mode (OAuth): the installation store says, at each request, whether
a bot token is stored for the workspace (bot/slack/installations.py `InstalledWorkspaces`), so an
uninstalled workspace is refused from the moment its tokens are removed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from slack_bolt.async_app import AsyncBoltContext
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from storage.tenancy import Workspace

__all__ = ["WORKSPACE_KEY", "Gate", "Installed", "Installs", "NoWorkspace", "gate", "workspace_of"]

log = logging.getLogger("dialectic.slack.gate")
WORKSPACE_KEY = "dialectic_workspace"


class NoWorkspace(RuntimeError):
    """A listener ran without the gate having established the request's workspace (a bug)."""


class Installs(Protocol):
    """Which installed workspace a request delivered to (`team_id`, `enterprise_id`) belongs to;
    None when it is not installed."""

    async def workspace_for(self, *, team_id: str | None, enterprise_id: str | None
                            ) -> Workspace | None: ...


class Installed:
    """The installed workspace: the bot token's identity (`auth.test`), asked once and kept."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._identity: AsyncSlackResponse | None = None
        self._lock = asyncio.Lock()

    async def identity(self) -> AsyncSlackResponse:
        async with self._lock:
            if self._identity is None:
                self._identity = await self.client.auth_test()
        return self._identity

    async def workspace_for(self, *, team_id: str | None, enterprise_id: str | None
                            ) -> Workspace | None:
        """The installed workspace a request delivered to (`team_id`, `enterprise_id`) belongs
        to; None when it is not installed or names no workspace."""
        if not team_id:
            return None
        bot = await self.identity()
        installed_team, installed_org = bot.get("team_id"), bot.get("enterprise_id")
        if bot.get("is_enterprise_install"):
            # org-wide: every workspace of the organisation is installed
            if not installed_org or enterprise_id != installed_org:
                return None
            return Workspace(team_id, enterprise_id, home=team_id == installed_team)
        if team_id != installed_team:
            return None
        if enterprise_id and installed_org and enterprise_id != installed_org:
            return None   # the right team id under another organisation: not ours
        return Workspace(team_id, installed_org, home=True)


def _kind(body: dict[str, Any]) -> str:
    if body.get("type") == "event_callback":
        return f"event {str((body.get('event') or {}).get('type') or '?')[:40]}"
    if body.get("command"):
        return f"command {str(body['command'])[:40]}"
    return str(body.get("type") or "request")[:40]


class Gate(AsyncMiddleware):
    """The Bolt middleware that lets through only requests of an installed workspace. A class,
    not a function: Bolt hands a function middleware every listener argument, built afresh for
    each request (the body's payload read for each kind of request), and this one the request."""

    def __init__(self, installed: Installs) -> None:
        self.installed = installed

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        context = req.context
        workspace = await self.installed.workspace_for(team_id=context.team_id,
                                                       enterprise_id=context.enterprise_id)
        if workspace is None:
            log.info("refused a Slack %s from workspace %r (enterprise %r): not installed here",
                     _kind(req.body), str(context.team_id or "")[:20],
                     str(context.enterprise_id or "")[:20])
            return BoltResponse(status=200, body="")
        context[WORKSPACE_KEY] = workspace
        await next()
        return None   # as a function middleware's: the listener's ack makes the response


def gate(installed: Installs) -> Gate:
    """The Bolt middleware that lets through only requests of an installed workspace."""
    return Gate(installed)


def workspace_of(context: AsyncBoltContext) -> Workspace:
    """The installed workspace the gate established for this request."""
    found = context.get(WORKSPACE_KEY)
    if not isinstance(found, Workspace):
        raise NoWorkspace("a Slack listener ran without the workspace gate")
    return found
