"""Which Web API client a Slack call uses: the one function every surface asks.

Single-token mode: always the one client (the bot token's). Multi-workspace mode: the client of
the workspace the work is for, with that workspace's bot token from the installation store
(bot/slack/installations.py). The client is *bound* for the duration of the work it serves — a
Slack request (the token Bolt authorised it with, `bind_request_client`) or one outbox delivery
(the debate's workspace, bot/slack/delivery.py) — and read with `current(default)`; a call that
is queued (the per-channel pacer) reads it when it is queued, not when it runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

from slack_bolt.async_app import AsyncBoltContext
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.client import WebClient
from bot.slack.installations import SealedInstallationStore
from storage.records import Origin

__all__ = ["WorkspaceClients", "bind_request_client", "current", "using"]

_bound: ContextVar[AsyncWebClient | None] = ContextVar("dialectic_slack_client", default=None)


def current(default: AsyncWebClient) -> AsyncWebClient:
    """The client bound to the work in progress, else `default` (the single token's)."""
    return _bound.get() or default


@contextlib.contextmanager
def using(client: AsyncWebClient | None) -> Iterator[None]:
    """Bind `client` for the block (None binds nothing)."""
    token = _bound.set(client) if client is not None else None
    try:
        yield
    finally:
        if token is not None:
            _bound.reset(token)


class WorkspaceClients:
    """The client for a workspace: the base client (single-token mode), or one carrying the
    workspace's own bot token (multi-workspace mode)."""

    def __init__(self, base: AsyncWebClient, store: SealedInstallationStore | None) -> None:
        self.base = base
        self.store = store
        self._made: dict[str, AsyncWebClient] = {}

    async def for_workspace(self, *, team_id: str | None, enterprise_id: str | None = None
                            ) -> AsyncWebClient | None:
        """None when no installed workspace answers for it (multi-workspace mode)."""
        if self.store is None:
            return self.base
        if not team_id:
            return None
        bot = await self.store.installed_bot(team_id=team_id, enterprise_id=enterprise_id)
        if bot is None:
            return None
        client = self._made.get(bot.bot_token)
        if client is None:
            client = WebClient(token=bot.bot_token, base_url=self.base.base_url,
                               retry_handlers=list(self.base.retry_handlers))
            self._made[bot.bot_token] = client
        return client

    async def for_origin(self, origin: Origin) -> AsyncWebClient | None:
        """The client of the workspace a debate was started in."""
        return await self.for_workspace(team_id=origin.team_id)


async def bind_request_client(context: AsyncBoltContext,
                              next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
    """Bolt middleware: the request's listeners use the client Bolt authorised the request
    with. Bolt runs its middleware one after another, not nested (`next()` only lets the
    request go on), so the binding is set for the rest of the request's task, not reset
    here; every request of this app passes here and binds its own (listener tasks started
    later inherit it)."""
    _bound.set(context.client)
    await next()
    return None
