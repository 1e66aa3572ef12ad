"""Block Kit for scheduled runs: the one digest message per slot, its thread details, and the
pre-meeting brief. Pure functions over values; helpers come from `bot.blocks` and `bot.mrkdwn`.

The digest puts the signals the AI could not settle first ("Focus here"), then the settled ones,
each with its verdict, band, key disagreement and a transcript link; skipped signals, failed
sources and earlier missed slots sit in the tail, which fitting never cuts. Every piece of
signal, model or source text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.scheduling.reports import UNSETTLED_STATUSES, DigestReport, SignalOutcome
from bot.slack.mrkdwn import chunk, date_fmt, escape, link, truncate
from bot.slack.views.common import (
    BAND_WORDS,
    ROUTING_WORDS,
    SECTION_TEXT_MAX,
    Block,
    Message,
    context,
    divergence_summary,
    fit,
    header,
    incomplete_banner,
    is_incomplete,
    rehearsal_banner,
    section,
    side_name,
    usd,
)
from engine.domain import DebateResult, TraceRow
from engine.vocabulary import ROUTED_TO_HUMANS
from storage.records import DebateStatus

TAIL_MAX = 2000
TITLE_MAX = 160


# --------------------------------------------------------------------------------------------
# the digest


def key_disagreement(result: DebateResult | None) -> str:
    """The point the judges split on most, escaped; "" when there is none."""
    if result is None or not result.divergence.disagreements:
        return ""
    point = result.divergence.disagreements[0]
    return f"{truncate(escape(point.label or point.item), 200)} (spread {point.spread:.1f})"


def _band(result: DebateResult) -> str:
    if result.consensus is None:
        return "no judge panel"
    return BAND_WORDS.get(result.consensus.band, escape(result.consensus.band))


def _verdict_words(result: DebateResult) -> str:
    """The verdict (escaped, on one line); the winning side when there is no verdict text."""
    if result.verdict.strip():
        return escape(" ".join(result.verdict.split()))
    return f"{side_name(result.winner)} wins" if result.winner else "no verdict"


def _signal_line(outcome: SignalOutcome) -> str:
    title = truncate(escape(outcome.title.replace("\n", " ")), TITLE_MAX)
    parts = [f"*{title}*"]
    result = outcome.result
    if result is None:
        parts.append(f"{escape(outcome.status)}: {truncate(escape(outcome.reason), 300)}")
    else:
        parts.append(truncate(_verdict_words(result), 240))
        parts.append(_band(result))
        if outcome.status in UNSETTLED_STATUSES or result.routing in ROUTED_TO_HUMANS:
            words = ROUTING_WORDS.get(result.routing, escape(result.routing))
            parts.append(escape(outcome.status.replace("_", " ")) + f" ({words})")
        if disagreement := key_disagreement(result):
            parts.append(f"key disagreement: {disagreement}")
    marks = [m for m in (outcome.cached and "cached", outcome.downgraded_from
             and f"downgraded from {escape(outcome.downgraded_from)}") if m]
    if marks:
        parts.append(", ".join(marks))
    if outcome.url:
        parts.append(link(outcome.url, "transcript"))
    return "• " + " · ".join(parts)


def _sections(title: str, lines: Sequence[str]) -> list[Block]:
    """Lines under a bold title, split into as many sections as Slack's 3000 chars need."""
    if not lines:
        return []
    text = f"*{title}*\n" + "\n".join(lines)
    return [section(part) for part in chunk(text, SECTION_TEXT_MAX - 100)]


def _problem_lines(report: DigestReport) -> list[str]:
    lines = [f"• {truncate(escape(o.title), TITLE_MAX)} — {escape(o.status)}: "
             f"{truncate(escape(o.reason), 300)}" for o in report.not_debated]
    lines += [f"• signal source: {truncate(escape(p), 400)}" for p in report.source_problems]
    lines += [f"• {truncate(escape(p), 300)}" for p in report.earlier_problems]
    return lines


def _tail(report: DigestReport) -> list[Block]:
    tail = []
    problems = _problem_lines(report)
    if problems:
        text = "*Skipped, failed and missed*\n" + "\n".join(problems)
        tail.append(section(truncate(text, TAIL_MAX)))
    debated = sum(1 for o in report.outcomes if o.debated)
    facts = [f"Total cost {usd(report.total_cost)}", f"{debated} debate(s)",
             f"slot {escape(report.slot)}"]
    if debated:
        facts.append("each signal's summary is in the thread")
    tail.append(context([" · ".join(facts)]))
    return tail


def _headline(report: DigestReport) -> str:
    debated = sum(1 for o in report.outcomes if o.debated)
    focus = len(report.focus)
    line = f"*{debated} signal(s) debated* for {date_fmt(report.when)}"
    if focus:
        line += f" · ⚠ *{focus} need(s) a person*"
    elif debated:
        line += " · the judges settled every one"
    if report.source_problems or report.not_debated:
        line += " · some signals were not debated (below)"
    return line


def digest_message(report: DigestReport) -> Message:
    """The one channel message of a digest run."""
    head = [header(f"Digest: {report.schedule_id}")]
    if report.rehearsal:
        head.append(rehearsal_banner())
    head.append(section(_headline(report)))
    body = _sections("Focus here", [_signal_line(o) for o in report.focus])
    body += _sections("Settled", [_signal_line(o) for o in report.settled])
    if not body:
        body = [context(["No signal was debated in this run."])]
    blocks = fit(head, body, _tail(report), transcript_url=None)
    prefix = "[Rehearsal] " if report.rehearsal else ""
    text = (f"{prefix}Digest {escape(report.schedule_id)}: "
            f"{sum(1 for o in report.outcomes if o.debated)} signal(s), "
            f"{len(report.focus)} to focus on, cost {usd(report.total_cost)}")
    return Message(truncate(text, SECTION_TEXT_MAX), blocks)


def digest_details(report: DigestReport) -> list[Message]:
    """The thread replies: each debated signal's full summary, focus signals first."""
    messages = []
    for outcome in [*report.focus, *report.settled]:
        if outcome.result is not None:
            messages.append(divergence_summary(outcome.result, transcript_url=outcome.url or ""))
            continue
        title = truncate(escape(outcome.title), 600)
        text = f"*{title}*\n{escape(outcome.status)}: {truncate(escape(outcome.reason), 1500)}"
        tail = [context([link(outcome.url, "transcript")])] if outcome.url else []
        messages.append(Message(truncate(f"{outcome.title}: {outcome.status}", 3000),
                                fit([section(text)], [], tail, transcript_url=outcome.url)))
    return messages


# --------------------------------------------------------------------------------------------
# the brief


def _trace_line(row: TraceRow) -> str:
    claim = truncate(escape(row.claim.replace("\n", " ")), 180)
    standing = escape(row.standing)
    line = f"• *{side_name(row.side)}* {claim} — _{standing}_"
    if row.challenged_by:
        challenge = truncate(escape(row.challenge.replace("\n", " ")), 120)
        line += f"; challenged by {side_name(row.challenged_by)}"
        line += f": {challenge}" if challenge else ""
    return line


def arguments_map(result: DebateResult, *, per_side: int = 5) -> list[str]:
    """The trace table condensed: each side's strongest claims, their standing and challenge."""
    lines: list[str] = []
    for side in dict.fromkeys(row.side for row in result.trace_table):
        rows = [r for r in result.trace_table if r.side == side]
        rows.sort(key=lambda r: -(r.strength or 0.0))
        lines += [_trace_line(r) for r in rows[:per_side]]
    return lines


def _discussion_points(result: DebateResult) -> list[str]:
    points = [f"• {truncate(escape(p.label or p.item), 200)} — the judges split "
              f"(spread {p.spread:.1f})" for p in result.divergence.disagreements[:3]]
    if result.consensus is not None and result.consensus.irreconcilable:
        points.append("• The judges' calls split on the winner: a person should decide.")
    if result.routing in ROUTED_TO_HUMANS:
        points.append(f"• Routing: {ROUTING_WORDS.get(result.routing, escape(result.routing))}")
    return points or ["• No strong disagreement among the judges."]


def _brief_body(result: DebateResult) -> list[Block]:
    body = [section(truncate(f"*Where it stands* ({_band(result)})\n{_verdict_words(result)}",
                             1200))]
    body += _sections("Points to discuss", _discussion_points(result))
    agreements = [f"• {truncate(escape(p.label or p.item), 200)}"
                  for p in result.divergence.agreements[:5]]
    body += _sections("Agreements", agreements or ["• None recorded."])
    body += _sections("Arguments map", arguments_map(result) or ["• No argument trace."])
    return body


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
    if result is None:
        state = escape(str(getattr(status, "value", status)))
        body = [section(f"⚠ The debate is not finished ({state}); the brief is not ready. "
                        "Follow the transcript for the result.")]
    else:
        body = _brief_body(result)
    tail = [context([link(url, "Full transcript")])] if url else []
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


__all__ = [
    "arguments_map",
    "brief_message",
    "brief_missed",
    "digest_details",
    "digest_message",
    "key_disagreement",
]
