"""App Home: the workspace's own recent debates, what they spent today, the review queue of
its own debates for reviewers, its settings and schedules; never another workspace's nor the
operator's (tenancy.py)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.scheduling import workspace as wsched
from bot.service import workspace_settings as ws
from bot.service import workspaces
from bot.service.reviews import Reviewers
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.views.home import app_home
from bot.slack.views.workspace_schedules import schedules_blocks
from bot.slack.views.workspace_settings import settings_blocks

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
    found = await ws.effective(ctx.rt.db, workspace.team_id, defaults(ctx))
    reviewers = Reviewers(found.reviewers, ctx.reviews.reviewers.directory,
                          team_id=workspace.team_id)
    is_reviewer = await reviewers.is_reviewer(user_id)
    pending = await workspaces.pending_reviews(ctx.service, workspace, limit=PENDING)
    judges = await ctx.service.oversight.judge_report()
    schedules = await wsched.listed(ctx.rt.db, workspace.team_id, ctx.service.clock())
    is_admin = await admin(ctx, user_id, workspace.team_id)
    view = app_home(recent, dict(budget), pending, is_reviewer=is_reviewer,
                    public_url=ctx.rt.settings.public_url, judges=judges,
                    settings=[*settings_blocks(found, admin=is_admin),
                              *schedules_blocks(schedules, admin=is_admin)])
    try:
        await client.views_publish(user_id=user_id, view=view)
    except SLACK_ERRORS as exc:
        log.warning("could not publish the Home tab for %s: %s", user_id, slack_error(exc))


def defaults(ctx: SlackContext) -> ws.Defaults:
    """The operator's values (the environment and dialectic.toml), where a workspace set none."""
    return ws.Defaults(daily_budget_usd=ctx.rt.settings.daily_budget_usd,
                       reviewers=ctx.rt.settings.reviewers,
                       review_channel=ctx.settings.review_channel)


async def admin(ctx: SlackContext, user_id: str, team_id: str) -> bool:
    """Whether Slack says `user_id` administers the workspace (no answer: no)."""
    try:
        found = await ctx.client.users_info(user=user_id)
    except SLACK_ERRORS as exc:
        log.warning("users.info for %s failed: %s", user_id, slack_error(exc))
        return False
    return ws.is_admin(found.get("user") or {}, team_id)


__all__ = ["admin", "defaults", "publish_home", "register"]
