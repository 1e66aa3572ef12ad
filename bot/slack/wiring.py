"""Putting Slack into a process (called by the composition root, bot/main.py).

`attach_notifier(rt, settings)` registers the notifier as the service's sink factory and
finished hook, so this process's debates post their updates; every process that runs debates
does it (a worker-only process too). It also gives the runtime Slack's user groups (for the
reviewer rule), tells Slack of reviews decided elsewhere and, with a client id and secret,
"Sign in with Slack" for the console; in multi-workspace mode, the directory of installed
workspaces and their admins that scopes the console's sessions and reviewer links.
`attach_slack(...)` builds the Bolt app around it, mounts it at POST /slack/events on the
process's aiohttp application (or connects Socket Mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web
from slack_bolt.async_app import AsyncApp

from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from bot.slack.app import build_bolt_app, make_client, mount
from bot.slack.assistant import DmStatus
from bot.slack.clients import WorkspaceClients
from bot.slack.context import SlackContext
from bot.slack.decisions import told_in_slack
from bot.slack.delivery import SlackDispatcher
from bot.slack.directory import SlackWorkspaces
from bot.slack.installations import installation_store
from bot.slack.notifier import SlackNotifier
from bot.slack.pacing import ChannelPacer
from bot.slack.settings import SlackSettings
from bot.slack.signin import SlackSignIn
from bot.slack.streaming import StreamingNotifier
from bot.slack.usergroups import SlackUserGroups

log = logging.getLogger("dialectic.slack")

CLOSE_GRACE = 10.0


def attach_notifier(rt: Runtime, settings: SlackSettings) -> SlackNotifier:
    """A notifier posting this process's debate updates: the service's sink factory and
    finished hook. Call once per runtime; `close_notifier` drains and closes it."""
    notifier = StreamingNotifier(rt, settings, make_client(settings),
                                 ChannelPacer(settings.slack_post_interval))
    if settings.multi_workspace:   # each workspace's calls with its own token
        notifier.clients = WorkspaceClients(notifier.base_client,
                                            installation_store(settings, rt.db))
        rt.workspaces = SlackWorkspaces(notifier.clients)   # sessions are a workspace's
    rt.service.sink_factories.append(notifier.sink_for)
    rt.service.finished_hooks.append(notifier.on_finished)
    dm_status = DmStatus(notifier)   # after the notifier's: its posts clear the status line
    rt.service.sink_factories.append(dm_status.sink_for)
    rt.service.finished_hooks.append(dm_status.on_finished)
    rt.reviews.reviewers.directory = SlackUserGroups(   # `S…` reviewer entries
        notifier.base_client, clients=notifier.clients)
    rt.reviews.decided_hooks.append(told_in_slack(notifier))   # decided in the console or CLI
    if settings.sign_in:   # the console's "Sign in with Slack"
        rt.sign_in = SlackSignIn(settings, bot=None if settings.multi_workspace
                                 else notifier.client)
    return notifier


def attach_slack(rt: Runtime, settings: SlackSettings, notifier: SlackNotifier,
                 scheduler: Scheduler, web_app: web.Application) -> AsyncApp:
    """The Bolt app on `web_app` (HTTP and/or Socket Mode), using `notifier`'s client."""
    ctx = SlackContext(rt=rt, settings=settings, base_client=notifier.base_client,
                       notifier=notifier,
                       scheduler=scheduler)
    if not rt.reviews.reviewers.configured:
        log.warning("no reviewers configured (DIALECTIC_REVIEWERS): review buttons refuse everyone")
    bolt = build_bolt_app(ctx)
    mount(bolt, web_app, settings, rt.link_problems)
    return bolt


@contextlib.asynccontextmanager
async def delivering(notifier: SlackNotifier | None) -> AsyncIterator[SlackDispatcher | None]:
    """The outbox's Slack dispatcher running while the block runs (nothing without Slack)."""
    if notifier is None:
        yield None
        return
    dispatcher = SlackDispatcher(notifier)
    stop = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(stop), name="slack-deliveries")
    try:
        yield dispatcher
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


async def close_notifier(notifier: SlackNotifier) -> None:
    """Let queued posts go out (for up to CLOSE_GRACE seconds), then close the notifier."""
    try:
        await asyncio.wait_for(notifier.drain(), CLOSE_GRACE)
    except TimeoutError:
        log.warning("Slack: gave up waiting for queued posts after %.0f s", CLOSE_GRACE)
    await notifier.close()


__all__ = ["attach_notifier", "attach_slack", "close_notifier", "delivering"]
