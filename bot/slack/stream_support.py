"""Whether a debate's plan is streamed: the workspace allows it (`StreamSupport`) and Slack's
Tier-2 budget for it is there (`stream_affordable`).

Every streamed debate costs two Tier-2 calls in its workspace, chat.startStream and
chat.stopStream (20 a minute each): 50 debates at once need minutes of them, and a debate whose
start or stop waits its turn shows its result late. So a stream is started only when neither
method has used its minute's calls in the workspace (bot/slack/limits.py counts every call and
knows a method Slack closed with a 429), and never for a debate that has already finished; any
other debate gets the status message, its chat.updates (Tier 3) and the result as a message,
exactly what a thread shows when streaming is off. A stream once started is always stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.limits import paced_limits
from engine.domain import utcnow
from storage import slack as slack_store
from storage.db import Database
from storage.records import DebateRecord
from storage.slack import StreamingRefusal

log = logging.getLogger("dialectic.slack")

StreamingMode = Literal["auto", "off"]
#: The Tier-2 calls a stream costs: its start and its stop.
STREAM_METHODS = ("chat.startStream", "chat.stopStream")

#: chat.startStream errors that say this workspace (or app) cannot stream at all.
UNAVAILABLE = frozenset({"unknown_method", "not_allowed", "feature_not_enabled",
                         "not_allowed_token_type", "method_deprecated", "missing_scope",
                         "team_not_allowed", "not_enabled"})

#: How long a workspace's refusal to stream holds before streaming is tried there again.
RETRY_STREAMING = timedelta(days=1)


class StreamSupport:
    """Whether to stream, per workspace: the setting, and the teams found not to allow it (in
    the database, so every process and a restart know; retried after `RETRY_STREAMING`)."""

    def __init__(self, mode: StreamingMode, db: Database, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.mode = mode
        self.db = db
        self.clock = clock
        self.unavailable: dict[str, StreamingRefusal] = {}   # team id -> what refused, when
        self._retrying: set[str] = set()   # refusals older than a day: try, and forget on success

    def usable(self, record: DebateRecord) -> bool:
        """Stream this debate: on, its workspace not known to refuse, a recipient known when
        its conversation is a channel (a DM needs none)."""
        origin = record.origin
        if self.mode == "off" or origin.status_ts or not origin.channel_id:
            return False
        if origin.stream_ts:
            return True
        if self._refused(origin.team_id or ""):
            return False
        return origin.channel_id.startswith("D") or bool(origin.team_id and origin.user_id)

    def _refused(self, team: str) -> bool:
        known = self.unavailable.get(team)
        return known is not None and self.clock() - known.at < RETRY_STREAMING

    async def refused_lately(self, team_id: str | None) -> bool:
        """Whether the workspace refused streaming less than a day ago: this process knows, or
        the database does (another process, or before a restart)."""
        team = team_id or ""
        if self._refused(team):
            return True
        async with self.db.transaction(readonly=True) as session:
            found = await slack_store.streaming_refusal(session, team)
        if found is None:
            return False
        if self.clock() - found.at >= RETRY_STREAMING:
            self._retrying.add(team)
            return False
        self.unavailable[team] = found
        log.info("Slack: streaming is unavailable in workspace %s (%s, learnt %s): status "
                 "messages there until %s", team or "?", found.error, found.at.isoformat(),
                 (found.at + RETRY_STREAMING).isoformat())
        return True

    async def refused(self, team_id: str | None, code: str) -> None:
        """Remember (in the database; logged once per team) that the workspace cannot stream."""
        team = team_id or ""
        if code not in UNAVAILABLE:
            return
        first = not self._refused(team)
        refusal = StreamingRefusal(team, code, self.clock())
        self.unavailable[team] = refusal
        self._retrying.discard(team)
        async with self.db.transaction() as session:
            await slack_store.refuse_streaming(session, team_id=team, error=code,
                                               now=refusal.at)
        if first:
            log.warning("Slack: streaming is unavailable in workspace %s (%s): debates there "
                        "post a status message and phase replies instead (tried again in "
                        "%d hour(s))", team or "?", code, RETRY_STREAMING // timedelta(hours=1))

    async def streamed(self, team_id: str | None) -> None:
        """A stream started where a refusal had expired: forget the refusal."""
        team = team_id or ""
        if team not in self._retrying:
            return
        self._retrying.discard(team)
        self.unavailable.pop(team, None)
        async with self.db.transaction() as session:
            await slack_store.allow_streaming(session, team)
        log.info("Slack: streaming works again in workspace %s", team or "?")


def stream_affordable(client: AsyncWebClient) -> bool:
    """Whether a stream started now would start and stop without waiting for Slack's Tier 2 in
    the client's workspace: neither chat.startStream nor chat.stopStream closed by a 429 or
    at its tier's calls in the last minute (a client without the shared limiter: always)."""
    limits = paced_limits(client)
    if limits is None:
        return True
    token = client.token or ""
    return not any(limits.saturated(token, method) for method in STREAM_METHODS)


__all__ = ["RETRY_STREAMING", "STREAM_METHODS", "UNAVAILABLE", "StreamSupport", "StreamingMode",
           "stream_affordable"]
