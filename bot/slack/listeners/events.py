"""Events: every message is remembered (thread context without history reads); a reply in a
running debate's thread becomes evidence; "@Dialectic debate [question]" debates the thread.

Bolt acks events before these run; repeated deliveries (Slack's retries, other replicas) were
already dropped by the dedupe middleware (see bot/slack/app.py).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from slack_bolt.async_app import AsyncApp, AsyncBoltContext

from bot.service import workspaces
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.listeners import direct
from bot.slack.notifier import SLACK_ERRORS, slack_error
from bot.slack.parsing import (
    Command,
    CommandError,
    ThreadLine,
    check_text,
    parse_mention,
    strip_mentions,
    thread_context,
)
from bot.slack.starter import NotInChannel, Place, start_debate
from bot.slack.views import notices
from engine.domain import Evidence
from engine.errors import InvalidRequest
from storage import slack as slack_store
from storage.errors import NotFound

log = logging.getLogger("dialectic.slack.events")

EVIDENCE_REACTION = "memo"
# Message subtypes that are a person saying something (others: edits, joins, bot posts...).
SPOKEN_SUBTYPES = frozenset({"thread_broadcast", "file_share"})
EDITED = "message_changed"
Tell = Literal["always", "in a debate's thread", "never"]
ALWAYS: Tell = "always"
IN_DEBATE: Tell = "in a debate's thread"
NEVER: Tell = "never"


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_message(event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ctx.track(handle_message(ctx, event, context.bot_user_id,
                                       workspace=workspace_of(context)))

    async def on_mention(event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ctx.track(handle_mention(ctx, event, workspace=workspace_of(context),
                                       bot_user_id=context.bot_user_id))

    app.event("message")(on_message)
    app.event("app_mention")(on_mention)


async def handle_message(ctx: SlackContext, event: dict[str, Any], bot_user_id: str | None,
                         workspace: Workspace) -> None:
    """Remember the message; a reply in a running debate's thread is evidence; any other DM
    is a question to debate (bot/slack/listeners/direct.py)."""
    message = spoken_message(event)
    if message is None:
        edited = edited_message(event)
        if edited is not None and not await _refused(ctx, edited, tell=NEVER):
            await _remember(ctx, edited)
        return
    if await _refused(ctx, message, tell=_told(event, message, bot_user_id)):
        return
    await _remember(ctx, message)
    taken = False
    if message.thread_ts and message.thread_ts != message.ts and not mentions(
            message.text, bot_user_id):
        taken = await _maybe_evidence(ctx, message, workspace)
    if not taken and direct.is_dm_event(event):
        await direct.on_dm(ctx, message, workspace=workspace, bot_user_id=bot_user_id)


async def handle_mention(ctx: SlackContext, event: dict[str, Any], *, workspace: Workspace,
                         bot_user_id: str | None) -> None:
    message = spoken_message(event)
    if message is None or await _refused(ctx, message, tell=ALWAYS):
        return
    await _remember(ctx, message)
    await _debate_thread(ctx, message, team_id=workspace.team_id, bot_user_id=bot_user_id)


def spoken_message(event: dict[str, Any]) -> slack_store.SeenMessage | None:
    """The message a person posted, or None for edits, deletions, joins and bot posts."""
    subtype = event.get("subtype")
    if subtype is not None and subtype not in SPOKEN_SUBTYPES:
        return None
    if event.get("bot_id") or not event.get("user") or not event.get("ts"):
        return None
    return slack_store.SeenMessage(
        channel_id=str(event.get("channel") or ""), ts=str(event["ts"]),
        thread_ts=event.get("thread_ts"), user_id=str(event["user"]),
        text=str(event.get("text") or ""))


def edited_message(event: dict[str, Any]) -> slack_store.SeenMessage | None:
    """The new version of an edited message (so the stored context stays current)."""
    if event.get("subtype") != EDITED or not isinstance(event.get("message"), dict):
        return None
    inner = dict(event["message"])
    inner.pop("subtype", None)
    inner.setdefault("channel", event.get("channel"))
    return spoken_message(inner)


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in text


def _told(event: dict[str, Any], message: slack_store.SeenMessage,
          bot_user_id: str | None) -> Tell:
    """Who hears that a message was not kept: a DM always; a mention is answered by the
    app_mention event (not twice); a thread reply if the thread is a debate's; else nobody."""
    if direct.is_dm_event(event):
        return ALWAYS
    if mentions(message.text, bot_user_id):
        return NEVER
    return IN_DEBATE if message.thread_ts and message.thread_ts != message.ts else NEVER


async def _refused(ctx: SlackContext, message: slack_store.SeenMessage, *, tell: Tell) -> bool:
    """True when the message's text cannot be kept (a lone surrogate, NUL: no database stores
    it): nothing is stored or started, and the person is told in the thread as `tell` says
    (other channel chatter is only logged)."""
    try:
        check_text(message.text)
        return False
    except CommandError as exc:
        problem = str(exc)
    log.warning("message %s in %s not kept: %s", message.ts, message.channel_id, problem)
    thread_ts = message.thread_ts or message.ts
    if tell == IN_DEBATE:
        async with ctx.rt.db.transaction(readonly=True) as session:
            in_debate = await slack_store.debates_in_thread(
                session, channel_id=message.channel_id, thread_ts=thread_ts)
        tell = ALWAYS if in_debate else NEVER
    if tell == ALWAYS:
        await _reply(ctx, message, notices.not_kept(problem), thread_ts)
    return True


async def _remember(ctx: SlackContext, message: slack_store.SeenMessage) -> None:
    if not message.channel_id:
        return
    async with ctx.rt.db.transaction() as session:
        await slack_store.remember_message(session, message)


async def _maybe_evidence(ctx: SlackContext, message: slack_store.SeenMessage,
                          workspace: Workspace) -> bool:
    """A reply in a running debate of the workspace's thread: record it (audited) and react to
    acknowledge. True when it was taken."""
    debate_ids = await workspaces.in_thread(ctx.service, workspace, channel_id=message.channel_id,
                                            thread_ts=str(message.thread_ts))
    item = Evidence(author=message.user_id, text=message.text,
                    source_id=f"{message.channel_id}:{message.ts}")
    for debate_id in debate_ids:
        try:
            added = await ctx.service.add_evidence(debate_id, item)
        except NotFound:
            continue
        if added:
            await _react(ctx, message)
            if added.findings:
                await _reply(ctx, message, notices.evidence_addressed_to_ai(),
                             str(message.thread_ts))
            return True
    return False


async def _react(ctx: SlackContext, message: slack_store.SeenMessage) -> None:
    try:
        await ctx.client.reactions_add(channel=message.channel_id, timestamp=message.ts,
                                       name=EVIDENCE_REACTION)
    except SLACK_ERRORS as exc:
        log.info("could not react to evidence %s: %s", message.ts, slack_error(exc))


async def _debate_thread(ctx: SlackContext, message: slack_store.SeenMessage,
                         team_id: str | None, bot_user_id: str | None) -> None:
    """"@Dialectic debate [question]": the thread (as the bot saw it) becomes the context."""
    question = parse_mention(message.text, bot_user_id)
    thread_ts = message.thread_ts or message.ts
    if question is None:
        await _reply(ctx, message, notices.mention_help(), thread_ts)
        return
    async with ctx.rt.db.transaction(readonly=True) as session:
        seen = await slack_store.thread_messages(session, channel_id=message.channel_id,
                                                 thread_ts=thread_ts)
    lines = [ThreadLine(m.ts, m.user_id, strip_mentions(m.text)) for m in seen]
    root = next((line.text for line in lines if line.ts == thread_ts), "")
    topic = question or (root if thread_ts != message.ts else "")
    if not topic:
        await _reply(ctx, message, notices.no_topic(), thread_ts)
        return
    context = thread_context(lines, skip_ts={message.ts})
    request = Command(action="start", topic=topic).request(requested_by=message.user_id,
                                                           context=context)
    place = Place(channel_id=message.channel_id, user_id=message.user_id, team_id=team_id,
                  thread_ts=thread_ts)
    try:
        await start_debate(ctx, request, place,
                           idempotency_key=f"slack:mention:{message.channel_id}:{message.ts}",
                           traced_as="mention")
    except InvalidRequest as exc:
        await _reply(ctx, message, notices.not_started(str(exc)), thread_ts)
    except NotInChannel as exc:
        log.warning("mentioned in %s but cannot post there: %s", exc.channel_id, exc.error)
    except SLACK_ERRORS as exc:
        log.warning("could not start a thread debate in %s: %s", message.channel_id,
                    slack_error(exc))


async def _reply(ctx: SlackContext, message: slack_store.SeenMessage, reply: Any,
                 thread_ts: str) -> None:
    try:
        await ctx.notifier.post(message.channel_id, reply, thread_ts=thread_ts)
    except SLACK_ERRORS as exc:
        log.warning("could not reply in %s: %s", message.channel_id, slack_error(exc))


__all__ = ["EVIDENCE_REACTION", "edited_message", "mentions", "register", "spoken_message"]
