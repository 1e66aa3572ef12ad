"""The workspace's settings from App Home: the Edit button opens the modal for the workspace's
admins and owners (Slack's `users.info`), the submission is checked field by field (a one-line
error beside the field, nothing changed) against the rule (bot/service/workspace_settings.py)
and against Slack (reviewers and the channel must exist), saved, audited, and the Home tab
shown again."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.service import workspace_settings as ws
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.listeners.home import admin, defaults, publish_home
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.views.workspace_settings import (
    BLOCK_OF,
    FIELDS,
    SETTINGS_EDIT,
    SETTINGS_MODAL,
    settings_modal,
)
from engine.errors import InvalidRequest

log = logging.getLogger("dialectic.slack.settings")
NOT_ADMIN = "Only this workspace's admins and owners can change its settings."


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_edit(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        user = str((body.get("user") or {}).get("id") or "")
        team = workspace_of(context).team_id
        if not await admin(ctx, user, team):
            log.warning("%s pressed Edit settings in %s but is no admin there", user, team)
            await ws.refused(ctx.rt.db, team, by=user, now=ctx.service.clock())
            return
        found = await ws.effective(ctx.rt.db, team, defaults(ctx))
        try:
            await ctx.client.views_open(trigger_id=str(body.get("trigger_id") or ""),
                                        view=settings_modal(found))
        except SLACK_ERRORS as exc:
            log.warning("could not open the settings form: %s", slack_error(exc))

    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                        context: AsyncBoltContext) -> None:
        await ctx.track(submit_settings(ctx, ack, body, view, workspace_of(context)))

    app.action(SETTINGS_EDIT)(on_edit)
    app.view(SETTINGS_MODAL)(on_submit)


def _form(view: dict[str, Any]) -> dict[str, str]:
    values = (view.get("state") or {}).get("values") or {}
    form = {}
    for field, (block, action) in FIELDS.items():
        if block in values:
            form[field] = str((values[block].get(action) or {}).get("value") or "")
    return form


async def submit_settings(ctx: SlackContext, ack: AsyncAck, body: dict[str, Any],
                          view: dict[str, Any], workspace: Workspace) -> None:
    """Checked, saved and shown again; or a one-line error beside the field, nothing saved."""
    user, team = str((body.get("user") or {}).get("id") or ""), workspace.team_id
    if not await admin(ctx, user, team):
        await ws.refused(ctx.rt.db, team, by=user, now=ctx.service.clock())
        await ack(response_action="errors", errors={BLOCK_OF[ws.BUDGET]: NOT_ADMIN})
        return
    try:
        in_force = await ctx.service.oversight.in_force()
        changes = ws.changes_from_form(
            _form(view), operator_cap_usd=defaults(ctx).daily_budget_usd,
            presets={name: force.thresholds for name, force in in_force.items()})
        await _exist(ctx, changes)
        await ws.save(ctx.rt.db, team, changes, by=user, admin=True, now=ctx.service.clock())
    except ws.FieldError as exc:
        await ack(response_action="errors", errors={BLOCK_OF[exc.field]: str(exc)[:150]})
        return
    except InvalidRequest as exc:
        await ack(response_action="errors", errors={BLOCK_OF[ws.BUDGET]: str(exc)[:150]})
        return
    await ack()
    await publish_home(ctx, user, workspace, client=ctx.client)


async def _exist(ctx: SlackContext, changes: dict[str, Any]) -> None:
    """FieldError unless Slack knows every reviewer (a user, a user group) and the channel."""
    for entry in changes.get(ws.REVIEWERS) or ():
        if not await _known(ctx, entry):
            kind = "user group" if entry.startswith("S") else "user"
            raise ws.FieldError(ws.REVIEWERS, f"reviewers: Slack knows no {kind} {entry}")
    channel = changes.get(ws.CHANNEL)
    if channel:
        try:
            await ctx.client.conversations_info(channel=channel)
        except SLACK_ERRORS as exc:
            raise ws.FieldError(ws.CHANNEL, f"review channel: Slack knows no channel {channel} "
                                f"I can see ({slack_error(exc)}); invite me to a private one"
                                ) from None


async def _known(ctx: SlackContext, entry: str) -> bool:
    try:
        if entry.startswith("S"):
            await ctx.client.usergroups_users_list(usergroup=entry)
        else:
            found = await ctx.client.users_info(user=entry)
            return not (found.get("user") or {}).get("deleted")
    except SLACK_ERRORS:
        return False
    return True
