"""What every Block Kit view shares: the `Message`, Slack's limits, block builders, the bot's
words for statuses, bands and routings, and `fit`, which cuts a message to the limits.

Builders take already-escaped mrkdwn (model and user text goes through `mrkdwn.escape` first);
`fit` cuts long content, with a pointer to the full transcript, and keeps headers, warnings
("Incomplete", "Rehearsal") and buttons.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)

from bot.service.results import ROUTING_WORDS
from bot.slack.mrkdwn import chunk, escape, is_web_url, link, truncate
from engine.money.cost import usd as money
from engine.vocabulary import Band, Side
from storage.records import DebateStatus

Block = dict[str, Any]

# --- Slack's limits (SLACK.md); MAX_BLOCKS_CHARS keeps a margin below msg_blocks_too_long ---
SECTION_TEXT_MAX = 3000
FIELD_TEXT_MAX = 2000
FIELDS_MAX = 10
HEADER_MAX = 150
CONTEXT_ELEMENTS_MAX = 10
MAX_BLOCKS = 50
MAX_BLOCKS_CHARS = 12_000
HOME_MAX_BLOCKS = 100
TEXT_MAX = 3000
OPTIONS_MAX = 100

REHEARSAL_NOTE = "Rehearsal: offline placeholder model, not a real debate"
SIDE_NAMES: dict[str, str] = {Side.PRO: "For", Side.CON: "Against", Side.TIE: "Tie"}
BAND_WORDS: dict[str, str] = {
    Band.HIGH: "high agreement",
    Band.TENTATIVE: "tentative agreement",
    Band.REVIEW: "needs review",
    Band.CONTENTIOUS: "contentious",
}
STATUS_WORDS = {
    DebateStatus.CREATED: ("⏳", "Queued"),
    DebateStatus.QUEUED: ("⏳", "Queued"),
    DebateStatus.DEBATING: ("💬", "Debating"),
    DebateStatus.JUDGING: ("⚖️", "Judging"),
    DebateStatus.COMPLETED: ("✅", "Finished"),
    DebateStatus.FAILED: ("❌", "Failed"),
    DebateStatus.TIMED_OUT: ("⌛", "Timed out"),
    DebateStatus.AWAITING_REVIEW: ("👀", "Awaiting review"),
    DebateStatus.APPROVED: ("✅", "Approved"),
    DebateStatus.ESCALATED: ("⛔", "Escalated"),
}


@dataclass(frozen=True, slots=True)
class Message:
    """A message ready for chat.postMessage / chat.update / respond: fallback text and blocks."""

    text: str
    blocks: list[Block]

    def kwargs(self) -> dict[str, Any]:
        """`text` and `blocks` as keyword arguments for the Web API client."""
        return {"text": self.text, "blocks": self.blocks}


# --------------------------------------------------------------------------------------------
# words and figures


def usd(amount: float) -> str:
    """Dollars as every surface writes them ("$0.0734", "$0.50", "$4.20"): engine/money/cost.py."""
    return money(amount)


def duration(seconds: float) -> str:
    """A short human duration: "42s", "3m 05s", "1h 02m"."""
    total = max(0, round(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {total % 3600 // 60:02d}m"


def side_name(side: str) -> str:
    """"pro" -> "For", "con" -> "Against"; any other role as its (escaped) name."""
    return SIDE_NAMES.get(side, escape(side))


def band_words(band: str) -> str:
    """The bot's words for an agreement band ("needs review")."""
    return BAND_WORDS.get(band, escape(band))


def routing_words(routing: str) -> str:
    """What a routing means for the result ("sent to a reviewer before it counts")."""
    return ROUTING_WORDS.get(routing, escape(routing))


def progress_bar(done: int, total: int, *, width: int = 20) -> str:
    """`▰▰▰▱▱ 3/5`; at most `width` cells so long plans stay on one line."""
    total = max(total, done, 0)
    if total == 0:
        return "▱ 0/0"
    cells = min(total, width)
    filled = round(done / total * cells)
    return "▰" * filled + "▱" * (cells - filled) + f" {done}/{total}"


def clip(text: str, limit: int) -> tuple[str, bool]:
    """Model text escaped and cut to `limit` characters (with an ellipsis), and whether anything
    was cut: replies have no length limit, so a view shortens them and says where the rest is."""
    escaped = escape(text)
    return truncate(escaped, limit), len(escaped) > limit


def quote(text: str, limit: int) -> str:
    """Escaped text as a mrkdwn block quote, cut to `limit` characters."""
    return truncate("> " + escape(text.strip()).replace("\n", "\n> "), limit)


def listing(items: Sequence[str], limit: int, *, shown: int = 5) -> str:
    """`a; b; c (+4 more)` over already-escaped items, cut to `limit` characters."""
    head = "; ".join(items[:shown])
    more = f" (+{len(items) - shown} more)" if len(items) > shown else ""
    return truncate(head, max(1, limit - len(more))) + more


# --------------------------------------------------------------------------------------------
# blocks (dicts, built and validated by slack_sdk.models)


def section(text: str) -> Block:
    """A mrkdwn section; `text` must already be escaped. Cut to 3000 characters. Built as the
    dict slack_sdk's `SectionBlock(text=MarkdownTextObject(...)).to_dict()` makes (its only check,
    the 3000 characters, is the cut; tests/unit/test_ack_fast_paths.py compares the two): every
    `/debate` ack is one, and the models cost more than the rest of the ack's text."""
    return {"text": {"text": truncate(text or " ", SECTION_TEXT_MAX), "type": "mrkdwn"},
            "type": "section"}


def fields(pairs: Iterable[tuple[str, str]]) -> Block:
    """A section of up to 10 "*label*\\nvalue" fields (values already escaped), 2000 chars each."""
    items = [MarkdownTextObject(text=truncate(f"*{label}*\n{value or ' '}", FIELD_TEXT_MAX))
             for label, value in list(pairs)[:FIELDS_MAX]]
    return SectionBlock(fields=items).to_dict()


def header(text: str) -> Block:
    """A header: plain text, so only the bot's own wording goes here, never model output."""
    return HeaderBlock(text=PlainTextObject(text=truncate(text, HEADER_MAX), emoji=True)).to_dict()


def context(parts: Iterable[str]) -> Block:
    """A context line of up to 10 mrkdwn elements (already escaped)."""
    elements = [MarkdownTextObject(text=truncate(p, SECTION_TEXT_MAX)) for p in parts if p]
    return ContextBlock(elements=elements[:CONTEXT_ELEMENTS_MAX] or [
        MarkdownTextObject(text=" ")]).to_dict()


def divider() -> Block:
    return DividerBlock().to_dict()


def rehearsal_banner() -> Block:
    return section(f"🧪 *{REHEARSAL_NOTE}.* Nothing here came from a real model.")


def links(transcript_url: str | None, debate_id: str, thread_link: str | None = None) -> Block:
    """"Debate thread · Full transcript · debate `id`": each link only when it is a web URL."""
    parts = []
    if thread_link and is_web_url(thread_link):
        parts.append(link(thread_link, "Debate thread"))
    if transcript_url and is_web_url(transcript_url):
        parts.append(link(transcript_url, "Full transcript"))
    parts.append(f"debate `{escape(debate_id)}`")
    return context([" · ".join(parts)])


def sections(title: str, lines: Sequence[str]) -> list[Block]:
    """Lines under a bold title, split into as many sections as Slack's 3000 chars need."""
    if not lines:
        return []
    text = f"*{title}*\n" + "\n".join(lines)
    return [section(part) for part in chunk(text, SECTION_TEXT_MAX - 100)]


def note(text: str, *extra: Block) -> Message:
    """A one-section message whose fallback text is the same (already escaped) text."""
    return Message(truncate(text, TEXT_MAX), [section(text), *extra])


# --------------------------------------------------------------------------------------------
# fitting a message to the limits


def _size(blocks: Sequence[Block]) -> int:
    return len(json.dumps(blocks))


def _shrink(block: Block, budget: int) -> Block | None:
    """The section with its text cut so its JSON takes <= `budget` chars; None if too little."""
    text = block.get("text", {}).get("text") if block.get("type") == "section" else None
    if not text or "fields" in block or "accessory" in block:
        return None
    low, high, best = 80, len(text), None
    while low <= high:
        middle = (low + high) // 2
        candidate = {**block, "text": {**block["text"], "text": truncate(text, middle)}}
        if len(json.dumps(candidate)) <= budget:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def truncation_notice(transcript_url: str | None) -> Block:
    """The line that says content was cut and where the rest is."""
    if transcript_url and is_web_url(transcript_url):
        return context([f"… (truncated — full transcript: {link(transcript_url, transcript_url)})"])
    return context(["… (truncated — the full transcript is in the web console)"])


def fit(head: Sequence[Block], body: Sequence[Block], tail: Sequence[Block], *,
        transcript_url: str | None, max_blocks: int = MAX_BLOCKS,
        max_chars: int = MAX_BLOCKS_CHARS) -> list[Block]:
    """`head + body + tail`, cutting `body` (never head or tail: banners, buttons) to the limits.

    When anything is cut, a truncation notice pointing at the transcript closes the body.
    """
    blocks = [*head, *body, *tail]
    if len(blocks) <= max_blocks and _size(blocks) <= max_chars:
        return blocks
    notice = truncation_notice(transcript_url)
    room_blocks = max_blocks - len(head) - len(tail) - 1
    room_chars = max_chars - _size([*head, notice, *tail])
    kept: list[Block] = []
    for block in body:
        if len(kept) >= room_blocks:
            break
        cost = len(json.dumps(block)) + 2  # ", " between list items
        if cost <= room_chars:
            kept.append(block)
            room_chars -= cost
            continue
        shrunk = _shrink(block, room_chars - 2)
        if shrunk is not None:
            kept.append(shrunk)
        break
    return [*head, *kept, notice, *tail]


def message(text: str, head: Sequence[Block], body: Sequence[Block], tail: Sequence[Block],
            transcript_url: str | None = None) -> Message:
    """A fitted message; `text` (already escaped) is cut to the fallback's limit."""
    return Message(truncate(text, TEXT_MAX),
                   fit(head, body, tail, transcript_url=transcript_url))


def text_input(ids: tuple[str, str], label: str, initial: str, hint: str, placeholder: str, *,
               multiline: bool = False, max_length: int = 1000, optional: bool = False) -> Block:
    """A modal's text field: `ids` are its (block id, action id), which a submission's listener
    reads and puts its one-line error beside."""
    block_id, action_id = ids
    element = PlainTextInputElement(action_id=action_id, initial_value=initial or None,
                                    placeholder=placeholder, max_length=max_length,
                                    multiline=multiline)
    return InputBlock(block_id=block_id, label=label, element=element, optional=optional,
                      hint=hint).to_dict()


__all__ = [
    "BAND_WORDS",
    "MAX_BLOCKS",
    "MAX_BLOCKS_CHARS",
    "REHEARSAL_NOTE",
    "ROUTING_WORDS",
    "SECTION_TEXT_MAX",
    "STATUS_WORDS",
    "TEXT_MAX",
    "Block",
    "Message",
    "band_words",
    "clip",
    "context",
    "divider",
    "duration",
    "fields",
    "fit",
    "header",
    "links",
    "listing",
    "message",
    "note",
    "progress_bar",
    "quote",
    "rehearsal_banner",
    "routing_words",
    "section",
    "sections",
    "side_name",
    "text_input",
    "truncation_notice",
    "usd",
]

