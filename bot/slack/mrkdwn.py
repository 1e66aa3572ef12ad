"""Slack mrkdwn helpers: escaping, safe truncation and splitting, mentions, links and dates.

Every piece of model or user text goes through `escape` before it reaches Slack, so a model that
writes `<!channel>` or `<https://evil|click>` shows those characters instead of pinging or linking.
The other helpers work on already-escaped text and never cut an entity (`&amp;`) or a
`<...>` token in half.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

ELLIPSIS = "…"

_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]+$")
# Entities escape() produces (and numeric ones), and Slack's <...> control sequences.
_ATOMS = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);|<[^<>\n]{1,400}>")
_UNSAFE_URL = re.compile(r"[\s<>|\x00-\x1f\x7f]")


def escape(text: str) -> str:
    """Escape `&`, then `<` and `>`: the three characters Slack's mrkdwn gives a meaning to."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_cut(text: str, index: int) -> int:
    """The largest position <= `index` that does not fall inside an entity or `<...>` token."""
    index = max(0, min(index, len(text)))
    window_start = max(0, index - 410)
    for match in _ATOMS.finditer(text, window_start):
        if match.start() >= index:
            break
        if match.start() < index < match.end():
            return match.start()
    return index


def truncate(text: str, limit: int, *, suffix: str = ELLIPSIS) -> str:
    """`text` cut to at most `limit` characters with `suffix` appended when anything was cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    if len(suffix) >= limit:
        return suffix[:limit]
    cut = safe_cut(text, limit - len(suffix))
    return text[:cut].rstrip() + suffix


def _split_point(rest: str, limit: int) -> int:
    """Where to split a too-long text: a paragraph, line or word boundary in the last half of
    the first `limit` characters, else a hard cut that spares entities and `<...>` tokens."""
    window = rest[: limit + 1]
    for separator in ("\n\n", "\n", " "):
        position = safe_cut(rest, window.rfind(separator))
        if position >= limit // 2:
            return position
    return safe_cut(rest, limit)


def chunk(text: str, limit: int) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, on paragraphs or lines if possible.

    Empty pieces are dropped; the separators a split happens on (newlines, a space) are dropped.
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    rest = text.strip("\n")
    while len(rest) > limit:
        position = _split_point(rest, limit)
        if position <= 0:  # an atom longer than the limit: cut it anyway, there is no choice
            position = limit
        piece, rest = rest[:position].rstrip(), rest[position:].lstrip("\n ")
        if piece.strip():
            pieces.append(piece)
    if rest.strip():
        pieces.append(rest.rstrip())
    return pieces


def user(user_id: str) -> str:
    """A mention for a Slack user id (`<@U…>`); anything else as escaped plain text."""
    if _USER_ID.match(user_id or ""):
        return f"<@{user_id}>"
    return escape(user_id or "")


def channel(channel_id: str) -> str:
    """A channel link (`<#C…>`) for a Slack channel id; anything else as escaped plain text."""
    if _CHANNEL_ID.match(channel_id or ""):
        return f"<#{channel_id}>"
    return escape(channel_id or "")


def is_web_url(url: str) -> bool:
    """True for an absolute http(s) URL that can sit inside `<url|label>` without breaking out."""
    if not url or _UNSAFE_URL.search(url):
        return False
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def link(url: str, label: str) -> str:
    """A link `<url|label>` with the label escaped; just the escaped label for a non-http(s) URL."""
    text = escape(label) if label else ""
    if not is_web_url(url):
        return text
    # Slack stores `&` inside links as `&amp;` and decodes it when rendering.
    return f"<{url.replace('&', '&amp;')}|{text}>" if text else f"<{url.replace('&', '&amp;')}>"


def date_fmt(ts: datetime) -> str:
    """A date Slack shows in the reader's time zone, with a UTC fallback for old clients."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    fallback = ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(ts.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


__all__ = [
    "ELLIPSIS",
    "channel",
    "chunk",
    "date_fmt",
    "escape",
    "is_web_url",
    "link",
    "safe_cut",
    "truncate",
    "user",
]
