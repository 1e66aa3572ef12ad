"""App Home: recent debates, today's spend against the cap, the review queue for reviewers."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack.context import SlackContext
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.views.home import app_home
from storage import reviews

log = logging.getLogger("dialectic.slack.home")

RECENT = 15
PENDING = 20


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_home_opened(event: dict[str, Any]) -> None:
        if event.get("tab", "home") != "home" or not event.get("user"):
            return
        await ctx.track(publish_home(ctx, str(event["user"])))

    app.event("app_home_opened")(on_home_opened)


async def publish_home(ctx: SlackContext, user_id: str) -> None:
    """Render and `views.publish` the user's Home tab."""
    recent = await ctx.service.recent(limit=RECENT)
    budget = await ctx.service.budget_today()
    is_reviewer = await ctx.reviews.reviewers.is_reviewer(user_id)
    async with ctx.rt.db.transaction(readonly=True) as session:
        pending = await reviews.list_pending(session, limit=PENDING)
    judges = await ctx.service.oversight.judge_report()
    view = app_home(recent, dict(budget), pending, is_reviewer=is_reviewer,
                    public_url=ctx.rt.settings.public_url, judges=judges)
    try:
        await ctx.client.views_publish(user_id=user_id, view=view)
    except SLACK_ERRORS as exc:
        log.warning("could not publish the Home tab for %s: %s", user_id, slack_error(exc))


__all__ = ["publish_home", "register"]
