"""Pre-meeting decision briefs: the one-page brief, the note when it could not be prepared in
time, and the confirmation that one is planned. Pure functions over values; every piece of
topic and model text is escaped."""

from __future__ import annotations

from datetime import datetime

from bot.scheduling.reports import BriefPlan
from bot.service.results import is_incomplete
from bot.slack.mrkdwn import channel, date_fmt, escape, link, truncate
from bot.slack.views.common import (
    SECTION_TEXT_MAX,
    Block,
    Message,
    context,
    fit,
    header,
    note,
    rehearsal_banner,
    section,
)
from bot.slack.views.debate import addressed_to_ai, band_of, incomplete_banner, verdict_words
from bot.slack.views.discussion import arguments_map, brief_sections
from bot.slack.views.feedback import feedback_blocks
from engine.domain import DebateResult
from storage.records import DebateStatus


def _brief_body(result: DebateResult) -> list[Block]:
    body = [section(truncate(f"*Where it stands* ({band_of(result)})\n{verdict_words(result)}",
                             1200))]
    return body + brief_sections(result)


def brief_message(topic: str, *, meeting_at: datetime, result: DebateResult | None,
                  status: DebateStatus | str, url: str | None, rehearsal: bool) -> Message:
    """The one-page pre-meeting brief: where it stands, points to discuss, agreements, the map."""
    head = [header("Decision brief")]
    if rehearsal or (result is not None and result.rehearsal):
        head.append(rehearsal_banner())
    head.append(section(f"*Topic*\n> {truncate(escape(topic), 600)}\n"
                        f"For the meeting at {date_fmt(meeting_at)}"))
    if result is not None and is_incomplete(result):
        head.append(incomplete_banner(result))
    if result is not None and result.flagged:
        head.append(addressed_to_ai(result.injection, result.preset))
    if result is None:
        state = escape(str(getattr(status, "value", status)))
        body = [section(f"⚠ The debate is not finished ({state}); the brief is not ready. "
                        "Follow the transcript for the result.")]
    else:
        body = _brief_body(result)
    tail = [context([link(url, "Full transcript")])] if url else []
    if result is not None:   # the brief shows a result: it is rated where it is read
        tail += feedback_blocks(result.id)
    prefix = "[Rehearsal] " if rehearsal else ""
    text = f"{prefix}Decision brief: {escape(topic)}"
    return Message(truncate(text, SECTION_TEXT_MAX),
                   fit(head, body, tail, transcript_url=url))


def brief_missed(topic: str, *, meeting_at: datetime, reason: str) -> Message:
    """Said in the channel when a brief could not be prepared in time."""
    text = (f"⚠ The decision brief on *{truncate(escape(topic), 300)}* for the meeting at "
            f"{date_fmt(meeting_at)} could not be prepared: {truncate(escape(reason), 600)}")
    return Message(truncate(f"Decision brief not prepared: {escape(topic)}", 3000),
                   [section(text)])


def brief_planned(plan: BriefPlan) -> Message:
    """`/debate brief`'s answer: when the debate starts, and where the brief lands by when."""
    return note(f"Brief planned: *{truncate(escape(plan.topic), 600)}* — it starts "
                f"{date_fmt(plan.start_at)} and lands in {channel(plan.channel)} before "
                f"{date_fmt(plan.meeting_at)}.")


__all__ = ["arguments_map", "brief_message", "brief_missed", "brief_planned"]
