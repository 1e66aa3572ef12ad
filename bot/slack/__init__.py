"""Dialectic in Slack: `/debate`, live debate threads, reviews, appeals, App Home.

`attach_slack(rt, web_app)` (called by bot.server when Slack is configured) builds the Bolt app,
mounts it at POST /slack/events (or connects Socket Mode) and attaches the notifier.
`attach_notifier(rt)` alone (worker-only processes) posts the updates of the debates this
process runs (the service's sink factory and finished hook), and is `rt.slack`, the paced
poster other code (the scheduler) uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.runtime import Runtime
from bot.slack.app import Cleanup, build_bolt_app, make_client, mount
from bot.slack.context import SlackContext
from bot.slack.housekeeping import housekeeping
from bot.slack.notifier import SlackNotifier
from bot.slack.pacing import ChannelPacer
from bot.slack.reviewers import ReviewerDirectory

log = logging.getLogger("dialectic.slack")

NOTIFIER = "slack_notifier"          # rt.extras key: the process's SlackNotifier
BOLT_APP = "slack_app"               # rt.extras key: the Bolt AsyncApp
PACING = "slack_pacing_seconds"      # rt.extras key overriding settings.slack_post_interval
CLOSE_GRACE = 10.0


def attach_notifier(rt: Runtime, client: AsyncWebClient | None = None) -> SlackNotifier:
    """Register the Slack sink factory and finished hook on the service (once per runtime)."""
    existing = rt.extras.get(NOTIFIER)
    if isinstance(existing, SlackNotifier):
        return existing
    interval = float(rt.extras.get(PACING, rt.settings.slack_post_interval))
    notifier = SlackNotifier(rt, client or make_client(rt.settings), ChannelPacer(interval))
    rt.service.sink_factories.append(notifier.sink_for)
    rt.service.finished_hooks.append(notifier.on_finished)
    rt.extras[NOTIFIER] = notifier
    rt.slack = notifier  # how non-Slack code (the scheduler) posts: paced, 429s retried
    return notifier


def attach_slack(rt: Runtime, web_app: web.Application) -> web.Application:
    """Bolt on `web_app` (HTTP and/or Socket Mode) plus the notifier; returns `web_app`."""
    client = make_client(rt.settings)
    notifier = attach_notifier(rt, client)
    ctx = SlackContext(rt=rt, client=client, notifier=notifier,
                       reviewers=ReviewerDirectory(client, rt.settings.reviewers))
    if not ctx.reviewers.configured:
        log.warning("no reviewers configured (DIALECTIC_REVIEWERS): review buttons refuse everyone")
    bolt = build_bolt_app(ctx)
    rt.extras[BOLT_APP] = bolt
    mount(bolt, web_app, rt.settings)
    web_app.cleanup_ctx.append(_close_notifier(notifier))
    web_app.cleanup_ctx.append(housekeeping(rt))
    return web_app


def _close_notifier(notifier: SlackNotifier) -> Cleanup:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        yield
        try:
            await asyncio.wait_for(notifier.drain(), CLOSE_GRACE)
        except TimeoutError:
            log.warning("Slack: gave up waiting for queued posts after %.0f s", CLOSE_GRACE)
        await notifier.close()

    return ctx


__all__ = ["BOLT_APP", "NOTIFIER", "PACING", "attach_notifier", "attach_slack"]
