"""The "Appeal this decision" message shortcut: runs the `appeal` preset on the message.

The platform-policy agent defends the moderation decision, the user's advocate argues for the
user, and the judges score against the workspace's policy text. The preset's thresholds route
the result: a clear panel resolves it, a split one goes to a reviewer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond

from bot.service.results import APPEAL_PRESET
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.parsing import CommandError, check_text
from bot.slack.settings import SlackSettings
from bot.slack.starter import NotInChannel, Place, start_debate
from bot.slack.views import notices
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.options import DebateOptions

log = logging.getLogger("dialectic.slack.shortcuts")

APPEAL_CALLBACK = "appeal_decision"
APPEAL_TOPIC = "Should the moderation decision on this message be overturned?"


@dataclass(frozen=True, slots=True)
class Appeal:
    """What a message shortcut payload says about the appealed message and who appeals."""

    team_id: str | None
    channel_id: str
    user_id: str
    message_ts: str
    thread_ts: str | None
    author: str
    text: str
    response_url: str | None
    trigger_id: str


def appeal_of(body: dict[str, Any]) -> Appeal:
    message = body.get("message") or {}
    return Appeal(
        team_id=(body.get("team") or {}).get("id") or body.get("team_id"),
        channel_id=str((body.get("channel") or {}).get("id") or ""),
        user_id=str((body.get("user") or {}).get("id") or ""),
        message_ts=str(message.get("ts") or body.get("message_ts") or ""),
        thread_ts=message.get("thread_ts"), author=str(message.get("user") or "unknown"),
        text=str(message.get("text") or ""), response_url=body.get("response_url"),
        trigger_id=str(body.get("trigger_id") or ""))


def policy_for(settings: SlackSettings, team_id: str | None) -> str:
    """The workspace's policy text, else the global one; "" when none is configured."""
    if team_id and settings.workspace_policies.get(team_id, "").strip():
        return settings.workspace_policies[team_id]
    return settings.appeal_policy.strip()


def appeal_request(appeal: Appeal, policy: str) -> DebateRequest:
    """The appeal as a debate: never served from the cache (the policy is not in its key)."""
    context = (f"The message under appeal, posted by <@{appeal.author}>:\n{appeal.text}"
               if appeal.text else "The message under appeal has no text (files or blocks only).")
    return DebateRequest(topic=APPEAL_TOPIC, preset=APPEAL_PRESET, context=context,
                         options=DebateOptions(policy=policy), requested_by=appeal.user_id,
                         no_cache=True)


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_appeal(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond,
                        context: AsyncBoltContext) -> None:
        await ack()
        appeal = replace(appeal_of(body), team_id=workspace_of(context).team_id)
        await ctx.track(start_appeal(ctx, appeal, respond))

    app.shortcut(APPEAL_CALLBACK)(on_appeal)


async def start_appeal(ctx: SlackContext, appeal: Appeal, respond: AsyncRespond) -> None:
    """Debate the appealed message in its thread, judged against the workspace's policy."""
    policy = policy_for(ctx.settings, appeal.team_id)
    if not policy:
        await respond(**notices.no_policy().kwargs())
        return
    try:
        check_text(appeal.text)
    except CommandError as exc:
        await respond(**notices.not_kept(str(exc)).kwargs())
        return
    if not await ctx.first_time("shortcut", appeal.trigger_id):
        return
    place = Place(channel_id=appeal.channel_id, user_id=appeal.user_id,
                  team_id=appeal.team_id, thread_ts=appeal.thread_ts or appeal.message_ts,
                  response_url=appeal.response_url)
    try:
        await start_debate(ctx, appeal_request(appeal, policy), place,
                           idempotency_key=f"slack:{appeal.trigger_id}", traced_as="appeal")
    except NotInChannel as exc:
        await respond(**notices.not_in_channel(exc.channel_id).kwargs())
    except InvalidRequest as exc:
        await respond(**notices.not_started(str(exc)).kwargs())
    except SLACK_ERRORS as exc:
        log.warning("could not start an appeal in %s: %s", appeal.channel_id,
                    slack_error(exc))
        await respond(**notices.post_failed(slack_error(exc)).kwargs())


__all__ = ["APPEAL_CALLBACK", "APPEAL_TOPIC", "Appeal", "appeal_of", "appeal_request",
           "policy_for", "register", "start_appeal"]
