"""Slack's part of housekeeping (bot/service/housekeeping.py runs it): the messages the bot
has seen are forgotten after `MESSAGE_TTL` (thread context for debates started later than that
is unlikely)."""

from __future__ import annotations

from datetime import timedelta

from bot.service.runtime import Runtime
from storage import slack as slack_store

MESSAGE_TTL = timedelta(days=30)


async def forget_messages(rt: Runtime) -> dict[str, int]:
    now = rt.service.clock()
    async with rt.db.transaction() as session:
        messages = await slack_store.forget_messages(session, before=now - MESSAGE_TTL)
    return {"Slack messages": messages}


__all__ = ["MESSAGE_TTL", "forget_messages"]
