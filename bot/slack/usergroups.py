"""Members of Slack user groups, for the reviewer rule (bot/service/reviews.py): a
`DIALECTIC_REVIEWERS` entry `S…` names a group. Members come from `usergroups.users.list`, cached
for `ttl` seconds so a burst of presses costs one call; when Slack cannot be asked, the last
known members are used (or nobody, the safe answer). In multi-workspace mode a group is one
workspace's: it is asked with that workspace's own token (bot/slack/clients.py), and a workspace
that is not installed has no members to give.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.clients import WorkspaceClients, current

log = logging.getLogger("dialectic.slack.usergroups")

DEFAULT_TTL = 300.0


class SlackUserGroups:
    """The service's GroupDirectory in Slack: members of a user group, cached for `ttl`."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.monotonic,
                 clients: WorkspaceClients | None = None) -> None:
        self.client = client
        self.clients = clients   # multi-workspace mode: each workspace's own token
        self.ttl = ttl
        self.clock = clock
        self._members: dict[tuple[str | None, str], tuple[float, frozenset[str]]] = {}

    async def _client(self, team_id: str | None) -> AsyncWebClient | None:
        if self.clients is None or self.clients.store is None:
            return self.client
        if team_id is None:   # a Slack request's own workspace, if one is bound
            bound = current(self.client)
            return bound if bound is not self.client else None
        return await self.clients.for_workspace(team_id=team_id)

    async def members(self, group: str, *, team_id: str | None = None) -> frozenset[str]:
        client = await self._client(team_id)
        if client is None:
            log.warning("could not list user group %s: %s", group,
                        f"the workspace {team_id} is not installed" if team_id
                        else "no workspace is named to ask")
            return frozenset()
        key = (client.token, group)   # a workspace's groups are its own
        cached = self._members.get(key)
        if cached is not None and self.clock() < cached[0]:
            return cached[1]
        try:
            reply = await client.usergroups_users_list(usergroup=group)
        except SLACK_ERRORS as exc:
            log.warning("could not list user group %s (%s); using %s", group, slack_error(exc),
                        "the last known members" if cached else "no members")
            return cached[1] if cached else frozenset()
        members = frozenset(str(u) for u in reply.get("users") or [])
        self._members[key] = (self.clock() + self.ttl, members)
        return members


__all__ = ["DEFAULT_TTL", "SlackUserGroups"]
