"""Who may decide reviews: the configured user ids, plus members of configured user groups.

`DIALECTIC_REVIEWERS` lists user ids (`U…`, `W…`) and/or user-group ids (`S…`). Group members
come from `usergroups.users.list`, cached for `ttl` seconds so a burst of presses costs one call;
when Slack cannot be asked, the last known members are used (or nobody, the safe answer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("dialectic.slack.reviewers")

DEFAULT_TTL = 300.0


def split_reviewers(entries: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(user ids, group ids) from the configured entries; anything else is ignored and logged."""
    users: set[str] = set()
    groups: list[str] = []
    for entry in (e.strip() for e in entries):
        if entry[:1] in ("U", "W") and entry[1:].isalnum():
            users.add(entry)
        elif entry[:1] == "S" and entry[1:].isalnum():
            groups.append(entry)
        elif entry:
            log.warning("ignoring reviewer %r: give Slack user ids (U…) or user-group ids (S…)",
                        entry)
    return frozenset(users), tuple(groups)


class ReviewerDirectory:
    """Answers "may this user decide reviews?" from settings and cached group membership."""

    def __init__(self, client: AsyncWebClient, reviewers: Iterable[str], *,
                 ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.users, self.groups = split_reviewers(reviewers)
        self.ttl = ttl
        self.clock = clock
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    @property
    def configured(self) -> bool:
        return bool(self.users or self.groups)

    async def is_reviewer(self, user_id: str) -> bool:
        if user_id in self.users:
            return True
        for group in self.groups:
            if user_id in await self.members(group):
                return True
        return False

    async def members(self, group: str) -> frozenset[str]:
        cached = self._members.get(group)
        if cached is not None and self.clock() < cached[0]:
            return cached[1]
        try:
            reply = await self.client.usergroups_users_list(usergroup=group)
        except (SlackApiError, ClientError, TimeoutError) as exc:
            log.warning("could not list user group %s (%s); using %s", group, _why(exc),
                        "the last known members" if cached else "no members")
            return cached[1] if cached else frozenset()
        members = frozenset(str(u) for u in reply.get("users") or [])
        self._members[group] = (self.clock() + self.ttl, members)
        return members


def _why(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "error"))
    return type(exc).__name__


__all__ = ["DEFAULT_TTL", "ReviewerDirectory", "split_reviewers"]
