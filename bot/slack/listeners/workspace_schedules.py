"""The workspace's schedules from App Home: its admins and owners (Slack's `users.info`, as for
the settings) add, edit, pause and remove them; the form is checked field by field against the
rules (bot/scheduling/workspace.py) and against Slack (the bot must see the channel), a one-line
error beside the field and nothing saved; every change is audited, and the Home tab is shown
again. A press or a form by anyone else is refused in a modal only they see, and audited."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.scheduling import workspace as wsched
from bot.service import workspace_settings as ws
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.listeners.home import admin, publish_home
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.views.workspace_schedules import (
    BLOCK_OF,
    FIELDS,
    SCHEDULE_ADD,
    SCHEDULE_EDIT,
    SCHEDULE_MODAL,
    SCHEDULE_PAUSE,
    SCHEDULE_REMOVE,
    SCHEDULE_RESUME,
    notice_modal,
    schedule_modal,
)
from engine.core.presets import all_presets
from engine.errors import InvalidRequest
from storage import workspace_schedules as store
from storage.errors import NotFound

log = logging.getLogger("dialectic.slack.schedules")
NOT_ADMIN = "Only this workspace's admins and owners can change its schedules."
GONE = "That schedule is not there any more (removed, or another workspace's)."


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_press(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await ctx.track(pressed(ctx, body, workspace_of(context)))

    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                        context: AsyncBoltContext) -> None:
        await ctx.track(submitted(ctx, ack, body, view, workspace_of(context)))

    for action in (SCHEDULE_ADD, SCHEDULE_EDIT, SCHEDULE_PAUSE, SCHEDULE_RESUME,
                   SCHEDULE_REMOVE):
        app.action(action)(on_press)
    app.view(SCHEDULE_MODAL)(on_submit)


def _presets(ctx: SlackContext) -> list[str]:
    return sorted(all_presets(ctx.engine))


async def _notice(ctx: SlackContext, body: dict[str, Any], text: str) -> None:
    try:
        await ctx.client.views_open(trigger_id=str(body.get("trigger_id") or ""),
                                    view=notice_modal(text))
    except SLACK_ERRORS as exc:
        log.warning("could not open the schedules notice: %s", slack_error(exc))


async def pressed(ctx: SlackContext, body: dict[str, Any], workspace: Workspace) -> None:
    """A button of the Schedules section: open the form, or pause, resume or remove."""
    user, team = str((body.get("user") or {}).get("id") or ""), workspace.team_id
    action = (body.get("actions") or [{}])[0]
    name, schedule_id = str(action.get("action_id") or ""), str(action.get("value") or "")
    now = ctx.service.clock()
    if not await admin(ctx, user, team):
        log.warning("%s pressed %s in %s but is no admin there", user, name, team)
        await wsched.refused(ctx.rt.db, team, by=user, now=now, what=name)
        await _notice(ctx, body, NOT_ADMIN)
        return
    try:
        if name == SCHEDULE_ADD:
            view = schedule_modal(_presets(ctx), timezone=ctx.scheduler.settings.timezone)
            await ctx.client.views_open(trigger_id=str(body.get("trigger_id") or ""), view=view)
            return
        if name == SCHEDULE_EDIT:
            async with ctx.rt.db.transaction(readonly=True) as session:
                found = await store.get(session, schedule_id)
            if found is None or found.team_id != team:
                raise NotFound("schedule", schedule_id)
            await ctx.client.views_open(trigger_id=str(body.get("trigger_id") or ""),
                                        view=schedule_modal(_presets(ctx), found))
            return
        if name == SCHEDULE_REMOVE:
            await wsched.remove(ctx.rt.db, team, schedule_id, by=user, admin=True, now=now)
        else:
            await wsched.set_enabled(ctx.rt.db, team, schedule_id, name == SCHEDULE_RESUME,
                                     by=user, admin=True, now=now)
    except NotFound:
        await _notice(ctx, body, GONE)
        return
    except SLACK_ERRORS as exc:
        log.warning("could not open the schedule form: %s", slack_error(exc))
        return
    await publish_home(ctx, user, workspace, client=ctx.client)


def _form(view: dict[str, Any]) -> dict[str, str]:
    values = (view.get("state") or {}).get("values") or {}
    form = {}
    for field, (block, action) in FIELDS.items():
        if block in values:
            given = values[block].get(action) or {}
            chosen = given.get("selected_option") or {}
            form[field] = str(given.get("value") or chosen.get("value") or "")
    return form


async def submitted(ctx: SlackContext, ack: AsyncAck, body: dict[str, Any],
                    view: dict[str, Any], workspace: Workspace) -> None:
    """Checked, saved and shown again; or a one-line error beside the field, nothing saved."""
    user, team = str((body.get("user") or {}).get("id") or ""), workspace.team_id
    now = ctx.service.clock()
    if not await admin(ctx, user, team):
        await wsched.refused(ctx.rt.db, team, by=user, now=now, what="form")
        await ack(response_action="errors", errors={BLOCK_OF[wsched.NAME]: NOT_ADMIN})
        return
    schedule_id = str(view.get("private_metadata") or "")
    try:
        fields = wsched.parse_form(_form(view), presets=_presets(ctx))
        await _visible(ctx, fields[wsched.CHANNEL])
        if schedule_id:
            await wsched.edit(ctx.rt.db, team, schedule_id, fields, by=user, admin=True, now=now)
        else:
            await wsched.add(ctx.rt.db, team, fields, by=user, admin=True, now=now)
    except ws.FieldError as exc:
        await ack(response_action="errors", errors={BLOCK_OF[exc.field]: str(exc)[:150]})
        return
    except InvalidRequest as exc:
        await ack(response_action="errors", errors={BLOCK_OF[wsched.NAME]: str(exc)[:150]})
        return
    except NotFound:
        await ack(response_action="errors", errors={BLOCK_OF[wsched.NAME]: GONE})
        return
    await ack()
    await publish_home(ctx, user, workspace, client=ctx.client)


async def _visible(ctx: SlackContext, channel: str) -> None:
    """FieldError unless Slack shows the bot the channel (with this workspace's token)."""
    try:
        await ctx.client.conversations_info(channel=channel)
    except SLACK_ERRORS as exc:
        raise ws.FieldError(wsched.CHANNEL, f"channel: Slack shows me no channel {channel} "
                            f"({slack_error(exc)}); invite me to a private one") from None
