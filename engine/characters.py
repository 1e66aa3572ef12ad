"""What characters a person's text holds: whether any of them can be seen, and whether it holds
one that nothing can store (a lone UTF-16 surrogate, or NUL).

`require_visible` is the one rule for a reason a person must give (escalating a review, a
"Why?" on feedback, applying routing thresholds): every surface that asks for one (API, Slack
forms, CLI, console) reaches it through the service, so none can accept "\u200b" as a reason.
"""

from __future__ import annotations

import re
import unicodedata

from engine.errors import InvalidRequest

# format (zero-width, bidi, tags, soft hyphen), control, surrogate, and the separators
_BLANK_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Zs", "Zl", "Zp"})
# letters and marks that render as nothing although Unicode does not class them as format
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u034f\u2800")
BROKEN = ("it holds a character that is not text (a lone UTF-16 surrogate, written \\ud800 "
          "to \\udfff); send it again as plain text")
NUL = "it holds a NUL character (\\u0000); send it again as plain text"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _blank(ch: str) -> bool:
    code = ord(ch)
    return (unicodedata.category(ch) in _BLANK_CATEGORIES or ch in _BLANK_LETTERS
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF)


def visible(text: str) -> bool:
    """True when some character of `text` shows: not whitespace, format, control, variation
    selector or blank filler."""
    return any(not _blank(ch) for ch in text)


def has_lone_surrogate(text: str) -> bool:
    """A code point in U+D800-U+DFFF: JSON can carry one ("\\ud800"), UTF-8 cannot encode it,
    so SQLite and PostgreSQL refuse it mid-insert."""
    return _SURROGATE.search(text) is not None   # in C: every /debate's text is checked


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored as it is (a lone surrogate, NUL), or None."""
    if has_lone_surrogate(text):
        return BROKEN
    if "\x00" in text:
        return NUL
    return None


def require_visible(text: str, refusal: str) -> str:
    """`text` without surrounding whitespace; InvalidRequest(`refusal`) when nothing in it
    shows once format, invisible and whitespace characters are set aside, or saying why when
    it holds a character that cannot be stored."""
    problem = unstorable(text)
    if problem is not None:
        raise InvalidRequest(f"nothing was kept: {problem}")
    if not visible(text):
        raise InvalidRequest(refusal)
    return text.strip()


__all__ = ["BROKEN", "NUL", "has_lone_surrogate", "require_visible", "unstorable", "visible"]
