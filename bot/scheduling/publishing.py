"""How scheduled runs reach people: a port the Slack surface implements (bot/slack/publisher.py).

Scheduling decides what to say (a `DigestReport`, a `BriefNote`); the publisher renders and
posts it, and answers with what it posted so the run's record keeps it. With Slack off there is
no publisher: the run is kept in the database and logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from bot.scheduling.reports import DigestReport
from storage.records import DebateRecord


@dataclass(frozen=True, slots=True)
class BriefNote:
    """A pre-meeting brief to post: the debate's record when one ran, or why there is none."""

    topic: str
    meeting_at: datetime
    record: DebateRecord | None = None
    url: str | None = None
    missed: str = ""          # why no brief was prepared ("" when `record` is the brief)
    rehearsal: bool = False


@dataclass(frozen=True, slots=True)
class Posted:
    """What a publisher did: the message's ts (None when it could not post), why not, and the
    message as posted (text and blocks), which the run's record keeps."""

    ts: str | None
    error: str | None = None
    message: dict[str, Any] = field(default_factory=dict)


class Publisher(Protocol):
    async def digest(self, channel: str, report: DigestReport, *, team: str | None = None
                     ) -> Posted:
        """Post the digest in `channel` (of workspace `team`, with its token), and its details
        in the digest's thread."""
        ...

    async def unreachable(self, team: str | None) -> str | None:
        """Why a schedule of workspace `team` cannot be posted now (the workspace is not
        installed, or none is named where several may be), or None."""
        ...

    async def brief(self, channel: str, note: BriefNote) -> Posted:
        """Post the brief (or the notice that there is none) in `channel`."""
        ...
