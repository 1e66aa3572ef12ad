"""`/debate`: start (with an immediate ack carrying the estimate), modal, help, status, estimate,
budget. Bad input gets an ephemeral message with what was wrong and the usage."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from zoneinfo import ZoneInfo

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.scheduling.briefs import parse_brief
from bot.service import workspaces
from bot.service.progress import progress_for, progress_from
from bot.service.tracing import tracing
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.parsing import MODES, USAGE, Command, CommandError, parse_command
from bot.slack.starter import (
    NotInChannel,
    Place,
    abandon_start,
    keep_start,
    run_kept,
    start_debate,
)
from bot.slack.views import debate as views
from bot.slack.views import notices
from bot.slack.views.brief import brief_planned
from bot.slack.views.budget import budget
from bot.slack.views.common import Message
from bot.slack.views.digest import schedule_list
from bot.slack.views.modals import debate_modal
from engine.core.debate import prepare
from engine.core.presets import all_presets
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.tracing import Span
from storage import audit
from storage.errors import NotFound
from storage.records import DebateRecord

log = logging.getLogger("dialectic.slack.commands")
COMMAND = "/debate"
ACK_EVENT = "dialectic.slack.ack"
RECENT_IN_STATUS = 5


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_debate(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond,
                        client: AsyncWebClient, context: AsyncBoltContext) -> None:
        try:
            command = parse_command(str(body.get("text") or ""))
        except CommandError as exc:
            await ack(**notices.usage_error(str(exc), USAGE).kwargs())
            return
        handler = HANDLERS[command.action]
        traces = tracing()
        with traces.span(f"slack {COMMAND} {command.action}", {
                "dialectic.surface": "slack", "dialectic.slack.action": command.action},
                kind="server") as span:  # the ack, and the submission it starts, in one trace
            await handler(ctx, command, body, TracedAck(ack, span) if traces.enabled else ack,
                          respond, client, workspace_of(context))

    app.command(COMMAND)(on_debate)


class TracedAck(AsyncAck):
    """The command's ack, recorded on its span when it is sent (Slack wants it within 3 s)."""

    def __init__(self, ack: AsyncAck, span: Span) -> None:
        self.response = None  # what AsyncAck.__init__ (untyped) does
        self._ack, self._span = ack, span

    async def __call__(self, *args: Any, **kwargs: Any) -> BoltResponse:
        self.response = response = await self._ack(*args, **kwargs)
        self._span.event(ACK_EVENT, {"http.response.status_code": response.status})
        return response


def place_of(body: dict[str, Any], workspace: Workspace) -> Place:
    """Where a slash command was typed (commands cannot be used inside threads)."""
    return Place(channel_id=str(body.get("channel_id") or ""),
                 user_id=str(body.get("user_id") or ""),
                 team_id=workspace.team_id, response_url=body.get("response_url"))


async def _help(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    await ack(**notices.help_text(USAGE).kwargs())


async def _modal(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                 respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    """Open the form at once: the trigger_id expires 3 s after the command."""
    await ack()
    presets = sorted(all_presets(ctx.engine))
    view = debate_modal(presets, list(MODES), str(body.get("channel_id") or ""))
    try:
        await client.views_open(trigger_id=body.get("trigger_id"), view=view)
    except SLACK_ERRORS as exc:
        log.warning("could not open the debate form: %s", slack_error(exc))
        await respond(**notices.usage_error(
            f"I could not open the form ({slack_error(exc)}); start with text instead.",
            USAGE).kwargs())


async def _estimate(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                    respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    try:
        request = command.request(requested_by=str(body.get("user_id") or ""))
        estimate = await ctx.service.estimate(request)
    except (InvalidRequest, ValueError) as exc:
        await ack(**notices.usage_error(str(exc), USAGE).kwargs())
        return
    await ack(**notices.estimate_reply(command.topic, estimate).kwargs())


async def _budget(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                  respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    await ack()
    state = await ctx.track(workspaces.budget_today(ctx.service, ws))
    await respond(**budget(state).kwargs())


async def _status(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                  respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    await ack()
    await ctx.track(_report_status(ctx, command, str(body.get("channel_id") or ""), respond,
                                   ws))


async def _report_status(ctx: SlackContext, command: Command, channel: str,
                         respond: AsyncRespond, workspace: Workspace) -> None:
    """One debate, or the channel's latest, rendered like their status messages: the
    workspace's own only (another's or the operator's is "not found", like an unknown id)."""
    if command.debate_id is not None:
        found = await workspaces.debate(ctx.service, command.debate_id, workspace)
        if found is None:
            await respond(**notices.not_found(command.debate_id).kwargs())
            return
        records = [found]
    else:
        records = await workspaces.in_channel(ctx.service, workspace, channel_id=channel,
                                              limit=RECENT_IN_STATUS)
    if not records:
        await respond(**notices.no_debates().kwargs())
        return
    messages = [await status_message(ctx, record) for record in records]
    await respond(**notices.stacked(messages).kwargs())


async def status_message(ctx: SlackContext, record: DebateRecord) -> Message:
    """A debate's status from its audit chain: works for debates run by any worker."""
    async with ctx.rt.db.transaction(readonly=True) as session:
        events = await audit.events(session, record.id, limit=2000)
    folded = progress_from(((e.kind, e.data) for e in events),
                           progress_for(ctx.engine, record.request))
    finished = record.finished_at is not None
    return views.status(record, folded, rehearsal=ctx.rehearsal,
                        transcript_url=ctx.notifier.url(record.id), final=finished)


async def _start(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                 respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    """Check the request, write the start down (one short group-committed write: a start
    acknowledged survives a SIGKILL) while estimating, ack with the estimate; then post the
    thread root and submit."""
    user = str(body.get("user_id") or "")
    try:
        request = command.request(requested_by=user)
        prepared = prepare(ctx.engine, request)   # bad input is refused here, before any write
    except (InvalidRequest, ValueError) as exc:
        await ack(**notices.usage_error(str(exc), USAGE).kwargs())
        return
    trigger = str(body.get("trigger_id") or "")
    place = place_of(body, ws)
    key = f"slack:{trigger}" if trigger else None
    # the start is written while the estimate reads today's budget: one wait before the ack
    keeping = None if key is None else asyncio.ensure_future(keep_start(ctx, request, place, key))
    try:
        estimate = await ctx.service.estimate(request, prepared=prepared)
    except Exception as exc:   # not acknowledged as started: its written start is ended
        if key is not None and keeping is not None and await keeping is not None:
            await abandon_start(ctx, key, f"{type(exc).__name__}: {exc}")
        if not isinstance(exc, InvalidRequest | ValueError):
            raise
        await ack(**notices.usage_error(str(exc), USAGE).kwargs())
        return
    owner = None if keeping is None else await keeping
    await ack(**notices.starting(command.topic, estimate, rehearsal=ctx.rehearsal).kwargs())
    if key is not None and owner is None:   # the start's unique key decides: replicas agree
        log.info("ignoring a repeated Slack delivery (command %s)", trigger)
        return
    await ctx.track(_start_after_ack(ctx, request, place, respond,
                                     None if key is None or owner is None else (key, owner)))


async def _start_after_ack(ctx: SlackContext, request: DebateRequest, place: Place,
                           respond: AsyncRespond, kept: tuple[str, str] | None) -> None:
    await ctx.answering.quiet()   # the acks of a burst go first: none of them needs this
    try:
        if kept is None:
            await start_debate(ctx, request, place, idempotency_key=None)
        else:
            await run_kept(ctx, request, place, *kept)
    except NotInChannel as exc:
        await respond(**notices.not_in_channel(exc.channel_id).kwargs())
    except SLACK_ERRORS as exc:
        log.warning("could not start a debate in %s: %s", place.channel_id, slack_error(exc))
        await respond(**notices.post_failed(slack_error(exc)).kwargs())


async def _brief(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                 respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    """`/debate brief TOPIC at 09:30 [in #channel]`: plan a brief that lands before then."""
    try:
        parsed = parse_brief(command.topic, now=ctx.service.clock(),
                             tz=ZoneInfo(ctx.scheduler.settings.timezone))
    except InvalidRequest as exc:
        await ack(**notices.usage_error(str(exc), USAGE).kwargs())
        return
    await ack()
    channel = parsed.channel or str(body.get("channel_id") or "")
    try:
        plan = await ctx.track(ctx.scheduler.plan_brief(
            topic=parsed.topic, at=parsed.at, channel=channel,
            requested_by=str(body.get("user_id") or "")))
    except InvalidRequest as exc:
        await respond(**notices.usage_error(str(exc), USAGE).kwargs())
        return
    await respond(**brief_planned(plan).kwargs())


async def _schedules(ctx: SlackContext, command: Command, body: dict[str, Any], ack: AsyncAck,
                     respond: AsyncRespond, client: AsyncWebClient, ws: Workspace) -> None:
    """List schedules with their next firing; reviewers may pause or resume one."""
    await ack()
    verb, user = command.options.get("verb"), str(body.get("user_id") or "")
    if verb is not None:
        if not await ctx.reviews.reviewers.is_reviewer(user):
            await respond(**notices.usage_error(
                "only reviewers may pause or resume schedules", USAGE).kwargs())
            return
        change = ctx.scheduler.pause if verb == "pause" else ctx.scheduler.resume
        try:
            await ctx.track(change(command.topic, user))
        except (InvalidRequest, NotFound) as exc:
            await respond(**notices.usage_error(str(exc), USAGE).kwargs())
            return
    schedules = await ctx.track(ctx.scheduler.views())
    await respond(**schedule_list(schedules).kwargs())


HANDLERS = {
    "brief": _brief,
    "schedules": _schedules,
    "help": _help,
    "modal": _modal,
    "estimate": _estimate,
    "budget": _budget,
    "status": _status,
    "start": _start,
}

__all__ = ["COMMAND", "register", "status_message"]
