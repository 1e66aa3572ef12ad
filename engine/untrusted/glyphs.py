"""What a reader sees in a string: invisible characters, look-alike letters, and the plain-ASCII
*skeleton* both the spotlight and the injection detector match against, so that "Ѕуѕtеm:" written
in Cyrillic, "Ｓｙｓｔｅｍ:" in fullwidth or "Sys\u200btem:" split by a zero-width space all read
as "System:".

Folding follows Unicode's own data: NFKC/NFKD (compatibility forms: fullwidth, mathematical
alphanumerics, ligatures) and the UTS #39 confusables table (shipped by `confusable-homoglyphs`)
for look-alikes from other scripts. The skeleton keeps a map back to the source, so a match found
in it can be located, reported or rewritten in the text itself.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

# Unicode tag characters: invisible, and able to spell out a whole hidden ASCII message
TAG_FIRST, TAG_LAST = 0xE0000, 0xE007F
# explicit embeddings, overrides and isolates ("Trojan Source"); the marks LRM/RLM/ALM are not here
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# invisible characters that are not Unicode "format" (Cf) characters but render as nothing
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u034f")
# UTS #39 leaves these as their own prototypes; a reader takes them for angle brackets
_EXTRA_LOOKALIKES = {"❬": "<", "❭": ">", "❮": "<", "❯": ">", "⟨": "<", "⟩": ">"}
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_MAX_CHAIN = 3


def is_tag(ch: str) -> bool:
    return TAG_FIRST <= ord(ch) <= TAG_LAST


def is_variation_selector(ch: str) -> bool:
    code = ord(ch)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def is_invisible(ch: str) -> bool:
    """A character that renders as nothing: format (Cf: zero-width, bidi, tags, BOM, soft hyphen),
    control (Cc) other than newline, lone surrogate, variation selector or blank filler letter."""
    if ch == "\n":
        return False
    category = unicodedata.category(ch)
    return (
        category in ("Cf", "Cc", "Cs")
        or is_variation_selector(ch)
        or ch in _BLANK_LETTERS
    )


@lru_cache(maxsize=8192)
def _plain_char(ch: str) -> str:
    """One character with line breaks made "\n", other whitespace " ", invisibles removed."""
    if ch in _LINE_BREAKS:
        return "\n"
    if ch == "\t" or unicodedata.category(ch) == "Zs":
        return " "
    return "" if is_invisible(ch) else ch


def clean(text: str) -> str:
    """`text` in NFKC with "\r\n" and every line break as "\n", every other space as " " and no
    invisible characters. Repeated to a fixed point: removing a character can let NFKC compose."""
    text = text.replace("\r\n", "\n")
    for _ in range(_MAX_CHAIN):
        plain = (text.translate(_ASCII_PLAIN) if text.isascii()   # a table lookup each, in C
                 else "".join(_plain_char(ch) for ch in text))
        normal = unicodedata.normalize("NFKC", plain)
        if normal == text:
            break
        text = normal
    return text


#: `_plain_char` of every ASCII character, for str.translate
_ASCII_PLAIN = {code: _plain_char(chr(code)) for code in range(128)}


#: `_library_lookalike`'s answer for the typographic characters most prose has (curly quotes,
#: dashes, bullets, arrows), so a text with no others needs no table (a unit test checks each
#: against the library)
_TYPOGRAPHIC: dict[str, str | None] = {
    "‘": "'", "’": "'", "‚": ",", "‛": "'", "“": '"', "”": '"', "„": None, "‟": '"',
    "′": "'", "‐": "-", "‒": "-", "–": "-", "—": None, "―": None, "−": "-", "•": None,
    "·": None, "«": None, "»": None, "‹": "<", "›": ">", "°": None, "×": "x", "→": None,
    "←": None, "©": None, "®": None, "€": None, "£": None,
}


def _ascii_lookalike(ch: str) -> str | None:
    """The ASCII prototype UTS #39 gives for `ch` (None: it has none)."""
    if ch in _TYPOGRAPHIC:
        return _TYPOGRAPHIC[ch]
    return _library_lookalike(ch)


def _library_lookalike(ch: str) -> str | None:
    """The ASCII prototype UTS #39 gives for `ch`, following up to three hops (〈 -> ❬ -> <)."""
    # lazy: the table is a JSON file parsed at import (about 0.02 s), which only a character
    # outside ASCII and `_TYPOGRAPHIC` needs; a process whose texts have none never loads it
    from confusable_homoglyphs import confusables as _confusables

    for _ in range(_MAX_CHAIN):
        if ch in _EXTRA_LOOKALIKES:
            return _EXTRA_LOOKALIKES[ch]
        found = _confusables.is_confusable(ch, greedy=True)
        if not found:
            return None
        glyphs = [str(g["c"]) for g in found[0]["homoglyphs"]]
        for glyph in glyphs:
            if glyph == "''":  # UTS #39 writes the prototype of " as two apostrophes
                return '"'
            if glyph.isascii() and glyph.strip():
                return glyph
        single = [g for g in glyphs if len(g) == 1]
        if not single:
            return None
        ch = single[0]
    return None


@lru_cache(maxsize=8192)
def skeleton_char(ch: str) -> str:
    """How `ch` reads in plain ASCII where it has a look-alike; unchanged where it has none."""
    plain = _plain_char(ch)
    if ch.isascii() or plain in ("", " ", "\n"):
        return plain
    parts: list[str] = []
    for part in unicodedata.normalize("NFKD", ch):
        if unicodedata.category(part) in ("Mn", "Me"):
            continue  # accents and enclosing marks: "é" reads as "e"
        if part.isascii():
            parts.append(part)
        else:
            parts.append(_ascii_lookalike(part) or part)
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Skeleton:
    """The folded text and, for each of its characters, the index of its source character."""

    text: str
    origin: Sequence[int]
    source_length: int

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the source that the skeleton span [start, end) came from."""
        if start >= end:
            at = self.origin[start] if start < len(self.origin) else self.source_length
            return at, at
        return self.origin[start], self.origin[end - 1] + 1


def fold(text: str) -> Skeleton:
    """The skeleton of `text`: each character as `skeleton_char` reads it, invisibles dropped."""
    if text.isascii():  # most model output: one table lookup per character, in C
        folded = text.translate(_ASCII_SKELETON)
        if len(folded) == len(text):  # no control character dropped: one for one
            return Skeleton(folded, range(len(text)), len(text))
    chars = [skeleton_char(ch) for ch in text]
    folded = "".join(chars)
    if len(folded) == len(text) and all(len(c) == 1 for c in chars):
        return Skeleton(folded, range(len(text)), len(text))  # the usual case: one for one
    origin: list[int] = []
    for index, part in enumerate(chars):
        origin.extend([index] * len(part))
    return Skeleton(folded, tuple(origin), len(text))


#: `skeleton_char` of every ASCII character (each is one character or none), for str.translate
_ASCII_SKELETON = {code: skeleton_char(chr(code)) for code in range(128)}
