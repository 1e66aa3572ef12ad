"""How every surface writes the small things a person reads: a count with its noun ("1 label",
"2 labels"), a negative number with a minus sign, an interval ("[−0.34, −0.03]", never
"-0.34--0.03"), an outcome's value as words (never a Python repr). Pure functions, so the
terminal, Slack and the console say the same thing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MINUS = "\u2212"
NOT_AVAILABLE = "n/a"
SIDE_WORDS = {"pro": "for", "con": "against"}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """"1 label", "0 labels", "2 analyses" (`plural` when it is not the noun with an s)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def number_text(value: float, digits: int = 2) -> str:
    """-0.34 written with a minus sign ("−0.34"), which no reader takes for a range's dash;
    what rounds to zero is "0.00", never "−0.00"."""
    text = f"{value:.{digits}f}"
    if not text.startswith("-"):
        return text
    return text[1:] if float(text) == 0 else MINUS + text[1:]


def interval_text(interval: tuple[float, float] | None, digits: int = 2) -> str:
    """"[−0.34, −0.03]": an interval as every surface writes it; "n/a" without one."""
    if interval is None:
        return NOT_AVAILABLE
    low, high = interval
    return f"[{number_text(low, digits)}, {number_text(high, digits)}]"


def plain_value(value: Any) -> str:
    """An outcome's value as words, never a Python repr: a rubric per side
    ({'pro': {'logic': 9}, 'con': {...}}) reads "for: logic 9; against: …"."""
    if isinstance(value, Mapping):
        nested = bool(value) and all(isinstance(v, Mapping) for v in value.values())
        joiner, between = ("; ", ": ") if nested else (", ", " ")
        return joiner.join(f"{SIDE_WORDS.get(str(k), k)}{between}{plain_value(v)}"
                           for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


__all__ = ["counted", "interval_text", "number_text", "plain_value"]
