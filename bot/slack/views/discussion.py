"""What presets promise beyond the panel's figures, as Block Kit: `decision`'s "needs human
discussion" with its core divergence points, and `brief`'s one-page brief (points to discuss,
agreements, arguments map). Both are computed once in the engine (engine/reading/discussion.py);
these are pure renderings, every piece of model text escaped."""

from __future__ import annotations

from bot.service.results import point_figures
from bot.slack.mrkdwn import escape, truncate
from bot.slack.views.common import Block, context, routing_words, section, sections, side_name
from engine.domain import Brief, DebateResult, Discussion, TraceRow
from engine.reading.discussion import brief_of
from engine.vocabulary import ROUTED_TO_HUMANS

NEEDS_DISCUSSION = "Needs human discussion"


def _trace_line(row: TraceRow) -> str:
    claim = truncate(escape(row.claim.replace("\n", " ")), 180)
    standing = escape(row.standing)
    line = f"• *{side_name(row.side)}* {claim} — _{standing}_"
    if row.challenged_by:
        challenge = truncate(escape(row.challenge.replace("\n", " ")), 120)
        line += f"; challenged by {side_name(row.challenged_by)}"
        line += f": {challenge}" if challenge else ""
    return line


def arguments_map(result: DebateResult) -> list[str]:
    """The brief's arguments map: each side's strongest claims, their standing and challenge."""
    return [_trace_line(r) for r in brief_of(result).arguments]


def discussion_points(result: DebateResult, brief: Brief) -> list[str]:
    """The brief's points to discuss: the widest splits, a split on the winner, the routing."""
    points = [f"• {truncate(escape(p.label or p.item), 200)} — the judges split "
              f"({point_figures(p).spread_text})" for p in brief.points]
    if brief.split_on_winner:
        points.append("• The judges' calls split on the winner: a person should decide.")
    if result.routing in ROUTED_TO_HUMANS:
        points.append(f"• Routing: {routing_words(result.routing)}")
    return points or ["• No strong disagreement among the judges."]


def brief_sections(result: DebateResult) -> list[Block]:
    """Points to discuss, agreements, arguments map: the body of the one-page brief."""
    brief = brief_of(result)
    body = sections("Points to discuss", discussion_points(result, brief))
    agreements = [f"• {truncate(escape(p.label or p.item), 200)}" for p in brief.agreements]
    body += sections("Agreements", agreements or ["• None recorded."])
    body += sections("Arguments map", arguments_map(result) or ["• No argument trace."])
    return body


def discussion_blocks(flag: Discussion) -> list[Block]:
    """"⚠ Needs human discussion (alpha 0.31 < 0.50)" and the core divergence points; a
    panel above the cut-off says only that it was not flagged, never that it is settled."""
    if not flag.needed:
        return [context([f"Not flagged for human discussion: {escape(flag.reason)}."])]
    lines = [f"• {truncate(escape(p.label or p.item), 200)} — "
             f"{point_figures(p).spread_text}" for p in flag.points]
    text = f"⚠ *{NEEDS_DISCUSSION}* ({escape(flag.reason)})"
    if lines:
        text += "\nThe core divergence points:\n" + "\n".join(lines)
    return [section(truncate(text, 2900))]


def preset_blocks(result: DebateResult, divergence: list[Block]) -> list[Block]:
    """The divergence summary's middle as the result's preset promises it: the brief's
    sections in place of the `divergence` blocks, or the discussion flag before them."""
    if result.brief is not None:
        return brief_sections(result)
    if result.discussion is not None:
        return [*discussion_blocks(result.discussion), *divergence]
    return divergence


__all__ = ["NEEDS_DISCUSSION", "arguments_map", "brief_sections", "discussion_blocks",
           "discussion_points", "preset_blocks"]
