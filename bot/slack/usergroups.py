"""Members of Slack user groups, for the reviewer rule (bot/service/reviews.py): a
`DIALECTIC_REVIEWERS` entry `S…` names a group. Members come from `usergroups.users.list`, cached
for `ttl` seconds so a burst of presses costs one call; when Slack cannot be asked, the last
known members are used (or nobody, the safe answer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.client import SLACK_ERRORS, slack_error

log = logging.getLogger("dialectic.slack.usergroups")

DEFAULT_TTL = 300.0


class SlackUserGroups:
    """The service's GroupDirectory in Slack: members of a user group, cached for `ttl`."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.ttl = ttl
        self.clock = clock
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    async def members(self, group: str) -> frozenset[str]:
        cached = self._members.get(group)
        if cached is not None and self.clock() < cached[0]:
            return cached[1]
        try:
            reply = await self.client.usergroups_users_list(usergroup=group)
        except SLACK_ERRORS as exc:
            log.warning("could not list user group %s (%s); using %s", group, slack_error(exc),
                        "the last known members" if cached else "no members")
            return cached[1] if cached else frozenset()
        members = frozenset(str(u) for u in reply.get("users") or [])
        self._members[group] = (self.clock() + self.ttl, members)
        return members


__all__ = ["DEFAULT_TTL", "SlackUserGroups"]
