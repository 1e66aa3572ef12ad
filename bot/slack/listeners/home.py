"""App Home: the workspace's own recent debates, what they spent today, the review queue of
its own debates for reviewers; never another workspace's nor the operator's (tenancy.py)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import workspaces
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.views.home import app_home

log = logging.getLogger("dialectic.slack.home")

RECENT = 15
PENDING = 20


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_home_opened(event: dict[str, Any], context: AsyncBoltContext) -> None:
        if event.get("tab", "home") != "home" or not event.get("user"):
            return
        await ctx.track(publish_home(ctx, str(event["user"]), workspace_of(context),
                                     client=context.client))

    app.event("app_home_opened")(on_home_opened)


async def publish_home(ctx: SlackContext, user_id: str, workspace: Workspace, *,
                       client: AsyncWebClient) -> None:
    """Render and `views.publish` the user's Home tab, of `workspace`'s records only, with
    the client Bolt authorised the request with (the workspace's own bot token)."""
    recent = await workspaces.recent(ctx.service, workspace, limit=RECENT)
    budget = await workspaces.budget_today(ctx.service, workspace)
    is_reviewer = await ctx.reviews.reviewers.is_reviewer(user_id)
    pending = await workspaces.pending_reviews(ctx.service, workspace, limit=PENDING)
    judges = await ctx.service.oversight.judge_report()
    view = app_home(recent, dict(budget), pending, is_reviewer=is_reviewer,
                    public_url=ctx.rt.settings.public_url, judges=judges)
    try:
        await client.views_publish(user_id=user_id, view=view)
    except SLACK_ERRORS as exc:
        log.warning("could not publish the Home tab for %s: %s", user_id, slack_error(exc))


__all__ = ["publish_home", "register"]
