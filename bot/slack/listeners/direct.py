"""Ask in a DM: a message to the app starts a debate in its thread; a new assistant thread is
offered the presets as suggested prompts.

A DM is read like `/debate`'s text (bot/slack/parsing.py): the question, and the same options
anywhere (`--preset decision`, `--mode structured`, `--rounds N`, `--judges N`). It goes through
the same path as `/debate` (bot/slack/starter.py) with the DM thread as the debate's thread, so
the status message, phase replies, result and follow-ups work there as in a channel. A reply in
the thread while the debate runs is evidence (bot/slack/listeners/events.py, which hands every
other DM here). Bad input gets one reply in the thread and starts nothing; messages from bots,
edits and the app's own posts never reach this module (events.spoken_message).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.service import workspaces
from bot.service.workspaces import Workspace
from bot.slack.assistant import announce, offer_prompts, preset_names
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.context import SlackContext
from bot.slack.notifier import Thread
from bot.slack.parsing import CommandError, parse_command
from bot.slack.starter import NotInChannel, Place, start_debate
from bot.slack.views import assistant as views
from bot.slack.views import notices
from bot.slack.views.common import Message
from engine.errors import InvalidRequest
from storage.records import TERMINAL_STATUSES, DebateStatus
from storage.slack import SeenMessage

log = logging.getLogger("dialectic.slack.dm")

ENDED = frozenset({*TERMINAL_STATUSES, DebateStatus.AWAITING_REVIEW})


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_thread_started(event: dict[str, Any]) -> None:
        thread = event.get("assistant_thread") or {}
        channel, thread_ts = thread.get("channel_id"), thread.get("thread_ts")
        if not channel or not thread_ts:
            return
        await ctx.track(offer_prompts(ctx.notifier, Thread(str(channel), str(thread_ts)),
                                      preset_names(ctx.notifier)))

    app.event("assistant_thread_started")(on_thread_started)


def is_dm_event(event: dict[str, Any]) -> bool:
    return event.get("channel_type") == "im"


async def on_dm(ctx: SlackContext, message: SeenMessage, *, workspace: Workspace,
                bot_user_id: str | None) -> None:
    """A person's DM that was not taken as evidence: a question, or a reply to an ended debate."""
    if bot_user_id and message.user_id == bot_user_id:
        return
    thread_ts = message.thread_ts or message.ts
    if message.thread_ts and message.thread_ts != message.ts:
        debate_ids = await workspaces.in_thread(ctx.service, workspace,
                                                channel_id=message.channel_id,
                                                thread_ts=message.thread_ts)
        if debate_ids:   # the thread is a debate's: evidence while it runs, else say why not
            records = [await ctx.service.get(debate_id) for debate_id in debate_ids]
            if all(r.status in ENDED for r in records):
                await _reply(ctx, message, views.finished_thread(), thread_ts)
            return
    await ask(ctx, message, team_id=workspace.team_id, bot_user_id=bot_user_id)


async def ask(ctx: SlackContext, message: SeenMessage, *, team_id: str | None,
              bot_user_id: str | None) -> None:
    """Start the DM's question as a debate in the DM thread (or say why not, once)."""
    thread_ts = message.thread_ts or message.ts
    text = _without_bot(message.text, bot_user_id)
    try:
        command = parse_command(text)
    except CommandError as exc:
        await _reply(ctx, message, views.dm_help(str(exc)), thread_ts)
        return
    if command.action != "start":
        problem = {"help": None, "modal": "Say what to debate."}.get(
            command.action, f"`{command.action}` works with /debate, not in a DM.")
        await _reply(ctx, message, views.dm_help(problem), thread_ts)
        return
    request = command.request(requested_by=message.user_id)
    place = Place(channel_id=message.channel_id, user_id=message.user_id, team_id=team_id,
                  thread_ts=thread_ts)
    try:
        started = await start_debate(ctx, request, place,
                                     idempotency_key=f"slack:dm:{message.channel_id}:{message.ts}",
                                     traced_as="dm")
    except InvalidRequest as exc:
        await _reply(ctx, message, notices.not_started(str(exc)), thread_ts)
        return
    except NotInChannel as exc:
        log.warning("cannot post in the DM %s: %s", exc.channel_id, exc.error)
        return
    except SLACK_ERRORS as exc:
        log.warning("could not start a DM debate in %s: %s", message.channel_id,
                    slack_error(exc))
        return
    sub = started.submission
    if sub is not None and not sub.cached and not sub.duplicate:
        await announce(ctx.notifier, started.thread, request.topic, rehearsal=ctx.rehearsal)


def _without_bot(text: str, bot_user_id: str | None) -> str:
    """The DM without the app's own mention (people often start with it out of habit)."""
    if not bot_user_id:
        return text
    return re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text).strip()


async def _reply(ctx: SlackContext, message: SeenMessage, reply: Message, thread_ts: str) -> None:
    try:
        await ctx.notifier.post(message.channel_id, reply, thread_ts=thread_ts)
    except SLACK_ERRORS as exc:
        log.warning("could not reply in the DM %s: %s", message.channel_id, slack_error(exc))


__all__ = ["ask", "is_dm_event", "on_dm", "register"]
