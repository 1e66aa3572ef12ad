"""Slack-side state: the messages the bot has seen, and which debate a Slack thread belongs to.

`slack_messages` keeps every message event the bot receives (channel, ts, thread, author, text),
so "@Dialectic debate" can use a thread as context without `conversations.replies` (rate limited
hard for non-Marketplace apps). `slack_threads` maps (channel, thread_ts) to the debates posted
there, so a thread reply can become evidence for the right debate. Migration 0002 creates both.
`slack_workspaces` (migration 0013) keeps the workspaces that refused streaming, and when.
Repositories take `*, session` and never commit, like the rest of `storage`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from storage.db import ignoring_insert, upserting, write
from storage.debates import to_record
from storage.models import DebateRow
from storage.records import DebateRecord
from storage.slack_rows import SlackMessageRow, SlackThreadRow, SlackWorkspaceRow
from storage.tenancy import Workspace, owned_by


@dataclass(frozen=True, slots=True)
class SeenMessage:
    """A message as the bot saw it in an event payload."""

    channel_id: str
    ts: str
    thread_ts: str | None
    user_id: str
    text: str


async def remember_message(
    session: AsyncSession, message: SeenMessage, *, now: datetime | None = None
) -> None:
    """Store a message (an edit replaces the text; a redelivery changes nothing else)."""
    values = {"channel_id": message.channel_id, "ts": message.ts,
              "thread_ts": message.thread_ts, "user_id": message.user_id,
              "text": message.text, "created_at": now or utcnow()}
    await write(session, upserting(session, SlackMessageRow, conflict=("channel_id", "ts"),
                                   update=("text",)), values)


async def thread_messages(
    session: AsyncSession, *, channel_id: str, thread_ts: str, limit: int = 200
) -> list[SeenMessage]:
    """The thread's root and replies the bot has seen, oldest first (the newest `limit`)."""
    rows = await session.scalars(
        select(SlackMessageRow)
        .where(SlackMessageRow.channel_id == channel_id,
               or_(SlackMessageRow.ts == thread_ts, SlackMessageRow.thread_ts == thread_ts))
        .order_by(SlackMessageRow.ts.desc()).limit(limit)
    )
    found = [SeenMessage(r.channel_id, r.ts, r.thread_ts, r.user_id, r.text) for r in rows]
    return sorted(found, key=lambda m: _ts_key(m.ts))


async def forget_messages(session: AsyncSession, *, before: datetime) -> int:
    """Drop messages stored before `before`; how many went."""
    result = await session.execute(
        delete(SlackMessageRow).where(SlackMessageRow.created_at < before)
        .returning(SlackMessageRow.ts).execution_options(synchronize_session=False)
    )
    return len(result.all())


async def link_thread(
    session: AsyncSession, *, channel_id: str, thread_ts: str, debate_id: str,
    now: datetime | None = None,
) -> None:
    """Record that the debate posts in this thread (idempotent)."""
    values = {"channel_id": channel_id, "thread_ts": thread_ts, "debate_id": debate_id,
              "created_at": now or utcnow()}
    await write(session, ignoring_insert(
        session, SlackThreadRow, conflict=("channel_id", "thread_ts", "debate_id")), values)


async def debates_in_thread(
    session: AsyncSession, *, channel_id: str, thread_ts: str,
    workspace: Workspace | None = None,
) -> list[str]:
    """Ids of the debates posted in the thread, newest first (with `workspace`, those it may
    see: a thread of a shared channel may hold another workspace's debate)."""
    stmt = select(SlackThreadRow.debate_id)
    if workspace is not None:
        stmt = stmt.join(DebateRow, DebateRow.id == SlackThreadRow.debate_id).where(
            owned_by(workspace))
    rows = await session.scalars(
        stmt
        .where(SlackThreadRow.channel_id == channel_id, SlackThreadRow.thread_ts == thread_ts)
        .order_by(SlackThreadRow.created_at.desc())
    )
    return list(rows)


async def recent_in_channel(
    session: AsyncSession, *, channel_id: str, limit: int = 5,
    workspace: Workspace | None = None,
) -> list[DebateRecord]:
    """The channel's latest debates, newest first (with `workspace`, those it may see)."""
    stmt = select(DebateRow).join(SlackThreadRow, SlackThreadRow.debate_id == DebateRow.id)
    if workspace is not None:
        stmt = stmt.where(owned_by(workspace))
    rows = await session.scalars(
        stmt.where(SlackThreadRow.channel_id == channel_id)
        .order_by(SlackThreadRow.created_at.desc(), DebateRow.created_at.desc()).limit(limit)
    )
    return [to_record(row) for row in rows]


@dataclass(frozen=True, slots=True)
class StreamingRefusal:
    """A workspace refused chat.startStream with `error` at `at`."""

    team_id: str
    error: str
    at: datetime


async def refuse_streaming(session: AsyncSession, *, team_id: str, error: str,
                           now: datetime | None = None) -> None:
    """Remember that the workspace refused streaming now (a later refusal moves the time)."""
    values = {"team_id": team_id, "streaming_error": error[:64],
              "streaming_refused_at": now or utcnow()}
    await write(session, upserting(session, SlackWorkspaceRow, conflict=("team_id",),
                                   update=("streaming_error", "streaming_refused_at")), values)


async def streaming_refusal(session: AsyncSession, team_id: str) -> StreamingRefusal | None:
    row = await session.get(SlackWorkspaceRow, team_id)
    if row is None:
        return None
    return StreamingRefusal(row.team_id, row.streaming_error, row.streaming_refused_at)


async def allow_streaming(session: AsyncSession, team_id: str) -> None:
    """The workspace streamed again: forget its refusal."""
    await session.execute(delete(SlackWorkspaceRow).where(SlackWorkspaceRow.team_id == team_id))


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, micros = ts.partition(".")
    return (int(seconds) if seconds.isdigit() else 0, int(micros) if micros.isdigit() else 0)


__all__ = [
    "SeenMessage",
    "SlackMessageRow",
    "SlackThreadRow",
    "StreamingRefusal",
    "allow_streaming",
    "debates_in_thread",
    "forget_messages",
    "link_thread",
    "recent_in_channel",
    "refuse_streaming",
    "remember_message",
    "streaming_refusal",
    "thread_messages",
]
