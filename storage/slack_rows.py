"""Slack's own tables (storage/dedupe.py and storage/slack.py are their repositories): events
already handled, the messages a thread debate read, which thread a debate answers in, what a
workspace refused. Beside storage/models.py (same Base and column types): only a process that
talks to Slack or purges a workspace maps them, never `dialectic run`; storage/schema.py lists
every table."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime


class SlackDedupeRow(Base):
    __tablename__ = "slack_dedupe"

    source: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class SlackMessageRow(Base):
    __tablename__ = "slack_messages"
    __table_args__ = (Index("ix_slack_messages_channel_id_thread_ts", "channel_id", "thread_ts"),)

    channel_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    ts: Mapped[str] = mapped_column(String(32), primary_key=True)
    thread_ts: Mapped[str | None] = mapped_column(String(32))
    user_id: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class SlackThreadRow(Base):
    __tablename__ = "slack_threads"

    channel_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    thread_ts: Mapped[str] = mapped_column(String(32), primary_key=True)
    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SlackWorkspaceRow(Base):
    """What the bot learnt about a Slack workspace: that it refused streaming (the error and
    when), so every process and a restart fall back without asking again for a day."""

    __tablename__ = "slack_workspaces"

    team_id: Mapped[str] = mapped_column(String(64), primary_key=True)   # "": unknown team
    streaming_error: Mapped[str] = mapped_column(String(64))
    streaming_refused_at: Mapped[datetime] = mapped_column(UTCDateTime())
