"""Feedback on results: a 👍 / 👎 press and the "Why?" form.

A press is acked at once, stored by the service (one per reader and result: a second press
replaces the first), audited there, and acknowledged with an ephemeral "Thanks — recorded". An
unknown or forged debate id, or another workspace's or the operator's debate, gets a one-line
ephemeral error and nothing is stored. The form
refuses a blank reason in place, as the escalate form does.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.service.feedback import MAX_REASON, NoSuchResult
from bot.service.workspaces import Workspace
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.context import SlackContext
from bot.slack.decisions import SURFACE
from bot.slack.gate import workspace_of
from bot.slack.listeners.actions import modal_choice, modal_text, press_of
from bot.slack.views import feedback as F
from bot.slack.views.common import Message
from engine.errors import InvalidRequest

log = logging.getLogger("dialectic.slack.feedback")


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_thumb(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await ctx.track(press_thumb(ctx, body, workspace_of(context)))

    async def on_why(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await ctx.track(open_why(ctx, body, workspace_of(context)))

    async def on_why_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                            context: AsyncBoltContext) -> None:
        await submit_why(ctx, ack, body, view, workspace_of(context))

    app.action(F.FEEDBACK_ACTION)(on_thumb)
    app.action(F.WHY_ACTION)(on_why)
    app.view(F.WHY_MODAL)(on_why_submit)


async def press_thumb(ctx: SlackContext, body: dict[str, Any], workspace: Workspace) -> None:
    press = press_of(body)
    parsed = F.parse_value(press["review_id"])   # press_of reads the action's value
    if parsed is None:
        await tell(ctx, press, F.unknown_result())
        return
    rating, debate_id = parsed
    try:
        given = await ctx.feedback.give(debate_id, user=press["user"], workspace=workspace,
                                        rating=rating, surface=SURFACE)
    except NoSuchResult:
        log.info("feedback on an unknown result %r by %s: nothing stored", debate_id,
                 press["user"])
        await tell(ctx, press, F.unknown_result())
        return
    await tell(ctx, press, F.thanks(rating, given.previous,
                                    rehearsal=given.feedback.rehearsal))


async def open_why(ctx: SlackContext, body: dict[str, Any], workspace: Workspace) -> None:
    press = press_of(body)
    try:
        record = await ctx.feedback.check(press["review_id"], workspace)
    except NoSuchResult:
        await tell(ctx, press, F.unknown_result())
        return
    try:
        await ctx.client.views_open(trigger_id=press["trigger_id"],
                                    view=F.why_modal(record.id, max_reason=MAX_REASON))
    except SLACK_ERRORS as exc:
        log.warning("could not open the feedback form: %s", slack_error(exc))


async def submit_why(ctx: SlackContext, ack: AsyncAck, body: dict[str, Any],
                     view: dict[str, Any], workspace: Workspace) -> None:
    """The "Why?" form: a blank reason or an unknown result is said in the form; nothing
    changes. Once stored, the form turns into the acknowledgement."""
    user = str((body.get("user") or {}).get("id") or "")
    debate_id = str(view.get("private_metadata") or "")
    reason = modal_text(view, F.REASON_BLOCK, F.REASON_ACTION)
    rating = F.rating_of(modal_choice(view, F.RATING_BLOCK, F.RATING_ACTION))
    try:
        given = await ctx.feedback.give(debate_id, user=user, workspace=workspace,
                                        rating=rating, reason=reason, surface=SURFACE)
    except NoSuchResult:
        await ack(response_action="errors",
                  errors={F.REASON_BLOCK: "I cannot find that result; nothing was recorded."})
        return
    except InvalidRequest as exc:
        refusal = f"{str(exc).rstrip('.')}."
        await ack(response_action="errors", errors={F.REASON_BLOCK: refusal[:150]})
        return
    said = F.thanks(rating, given.previous, rehearsal=given.feedback.rehearsal)
    await ack(response_action="update", view=F.thanks_view(said))


async def tell(ctx: SlackContext, press: dict[str, Any], message: Message) -> None:
    """An ephemeral line to the presser where they pressed."""
    if not press.get("channel") or not press.get("user"):
        return
    try:
        await ctx.client.chat_postEphemeral(channel=press["channel"], user=press["user"],
                                            **message.kwargs())
    except SLACK_ERRORS as exc:
        log.warning("could not answer %s: %s", press["user"], slack_error(exc))
