"""Multi-workspace mode's `WorkspaceDirectory` (bot/service/grants.py) for the console's
sessions and reviewer links: a workspace is installed while the installation store holds its bot
token (`InstalledWorkspaces`, the Slack gate's own answer), and someone administers it when
Slack's `users.info`, asked with *that* workspace's token (`WorkspaceClients`), says they are
its admin or owner. The admin answer is kept a minute per person and workspace, as a console
page load asks it on each request."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from bot.service.workspace_settings import is_admin
from bot.slack.clients import WorkspaceClients
from bot.slack.installations import InstalledWorkspaces
from storage.tenancy import Workspace

log = logging.getLogger("dialectic.slack.directory")

ADMIN_SECONDS = 60.0

__all__ = ["SlackWorkspaces"]


class SlackWorkspaces:
    """The installed workspaces, and who administers each, from Slack."""

    def __init__(self, clients: WorkspaceClients, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if clients.store is None:
            raise ValueError("the workspace directory serves multi-workspace mode only")
        self.clients = clients
        self.installs = InstalledWorkspaces(clients.store)
        self.clock = clock
        self._admins: dict[tuple[str, str], tuple[bool, float]] = {}

    async def installed(self, *, team_id: str, enterprise_id: str | None) -> Workspace | None:
        return await self.installs.workspace_for(team_id=team_id, enterprise_id=enterprise_id)

    async def is_admin(self, user: str, workspace: Workspace) -> bool:
        key = (workspace.team_id, user)
        kept = self._admins.get(key)
        if kept is not None and self.clock() - kept[1] < ADMIN_SECONDS:
            return kept[0]
        answer = await self._ask(user, workspace)
        if answer is not None:
            self._admins[key] = (answer, self.clock())
        return bool(answer)

    async def _ask(self, user: str, workspace: Workspace) -> bool | None:
        """users.info with the workspace's token; None when Slack could not say."""
        client = await self.clients.for_workspace(team_id=workspace.team_id,
                                                  enterprise_id=workspace.enterprise_id)
        if client is None:
            return False
        try:
            reply = await client.users_info(user=user)
        except SlackApiError as exc:
            log.warning("users.info for %s in %s refused (%s): not taken for an admin", user,
                        workspace.team_id, exc.response.get("error", "error"))
            return None
        except (ClientError, TimeoutError) as exc:
            log.warning("users.info for %s in %s: Slack not reached (%s)", user,
                        workspace.team_id, type(exc).__name__)
            return None
        found = reply.get("user")
        return isinstance(found, dict) and is_admin(found, workspace.team_id)
