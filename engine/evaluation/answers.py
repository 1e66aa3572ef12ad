"""From a model's reply to an answer that can be compared with the dataset's.

An item is one of four kinds, by its expected answer: multiple choice (it has `choices`), yes/no
(the answer is a yes/no word), numeric (the answer reads as a number) or text (anything else).
`normalise` maps a reply to the kind's canonical form — a letter, "yes"/"no", a number written
plainly ("1234", "-7", "2.5"), folded text — or None when the reply holds no usable answer.
Normalising is idempotent, so `is_correct` and `majority` take replies or normalised answers.
`describe` says these rules in one paragraph, printed with every report.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from engine.evaluation.dataset import LETTERS, Dataset, Item, fold


class Kind(StrEnum):
    CHOICE = "choice"
    YES_NO = "yes/no"
    NUMBER = "number"
    TEXT = "text"


YES = frozenset({"yes", "y", "yeah", "yep", "true", "correct", "affirmative"})
NO = frozenset({"no", "n", "nope", "false", "incorrect", "negative"})
NEGATIONS = frozenset({"not", "never", "isn't", "doesn't", "don't", "cannot", "can't", "won't"})

#: "the answer is", "final answer:", "result =" ...: the answer follows the last such cue
#: ("the answer to 6*7 is 42" is no cue: what follows "answer to" is the question).
_CUE = re.compile(r"\b(?:final\s+answer|answer|result)\b(?!\s+(?:to|for|of)\b)"
                  r"\s*(?:is|was|would\s+be|:|=)?\s*", re.IGNORECASE)
#: A number as people write it: sign (touching it: "10 - 3" is no -3), $, thousands commas,
#: decimals, exponent, %.
_NUMBER = re.compile(r"(?<![\w.,])(?P<sign>[-−–]?)(?:\$\s?)?"
                     r"(?P<digits>\d{1,3}(?:,\d{3})+|\d+)(?P<fraction>\.\d+)?"
                     r"(?P<exponent>[eE][-+]?\d+)?(?![\w])")
_MARKUP = re.compile(r"[*_`\\]")
_WORD = re.compile(r"[a-z']+")
_LETTER_FORMS = (
    re.compile(r"^\(?([a-z])\)?[.:]?$"),                   # "B", "(b)", "b.", "B:"
    re.compile(r"^\(?([a-z])[).:]\s"),                     # "b) text", "B. text", "B: text"
    re.compile(r"^\(([a-z])\)"),                            # "(b) text"
    re.compile(r"\b(?:option|choice|letter)\s+\(?([a-z])\b\)?"),  # "option B"
)


def kind(item: Item) -> Kind:
    """The kind of answer an item expects."""
    if item.choices:
        return Kind.CHOICE
    if fold(item.answer).strip(".!") in YES | NO:
        return Kind.YES_NO
    if _NUMBER.fullmatch(item.answer.strip().removesuffix("%").strip()) is not None:
        return Kind.NUMBER
    return Kind.TEXT


def _clean(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split())


def _after_cue(text: str) -> str | None:
    cues = list(_CUE.finditer(text))
    return text[cues[-1].end():] if cues else None


def _canonical(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    plain = format(value.normalize(), "f")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def _to_decimal(match: re.Match[str]) -> Decimal | None:
    body = match["digits"].replace(",", "") + (match["fraction"] or "") + (match["exponent"] or "")
    try:
        value = Decimal(body)
    except InvalidOperation:
        return None
    if not value.is_finite() or abs(value.adjusted()) > 30:
        return None
    return -value if match["sign"] else value


def _number(text: str) -> Decimal | None:
    """The number the text gives: the first after the last "answer is" cue, else the last."""
    cleaned = _clean(text)
    tail = _after_cue(cleaned)
    if tail is not None and (first := _NUMBER.search(tail)) is not None:
        return _to_decimal(first)
    found = list(_NUMBER.finditer(cleaned))
    return _to_decimal(found[-1]) if found else None


def _polarity(words: Sequence[str]) -> str | None:
    """The side the first word takes; a lone "y" or "n" only as the whole reply ("N/A" is no
    "no")."""
    if not words or (len(words[0]) == 1 and len(words) > 1):
        return None
    if words[0] in YES:
        return "yes"
    if words[0] in NO:
        return "no"
    return None


def _yes_no(text: str) -> str | None:
    """"yes"/"no" from the word after an answer cue, the reply's first word, or its only
    polarity (when it names one side only and negates nothing)."""
    cleaned = fold(_clean(text))
    tail = _after_cue(cleaned)
    if tail is not None and (found := _polarity(_WORD.findall(tail))) is not None:
        return found
    words = _WORD.findall(cleaned)
    if (found := _polarity(words)) is not None:
        return found
    sides = {"yes" if w in YES else "no" for w in words if w in YES | NO and len(w) > 1}
    if len(sides) == 1 and not NEGATIONS.intersection(words):
        return sides.pop()
    return None


def _letter(text: str, count: int) -> str | None:
    for form in _LETTER_FORMS:
        if (found := form.search(text)) is not None:
            letter = found.group(1).upper()
            return letter if letter in LETTERS[:count] else None
    return None


def _choice(text: str, choices: tuple[str, ...]) -> str | None:
    """The letter of the chosen choice: by exact text, by letter ("B", "(b)", "b) text", after
    an answer cue too), or by the one choice whose text the reply contains."""
    cleaned = fold(_clean(text)).strip(" .!")
    folded = [fold(c) for c in choices]
    if cleaned in folded:
        return LETTERS[folded.index(cleaned)]
    tail = _after_cue(cleaned)
    for candidate in (tail, cleaned):
        if candidate is None:
            continue
        candidate = candidate.strip(" .!")
        if candidate in folded:
            return LETTERS[folded.index(candidate)]
        if (letter := _letter(candidate, len(choices))) is not None:
            return letter
    contained = [i for i, c in enumerate(folded)
                 if re.search(rf"(?<!\w){re.escape(c)}(?!\w)", cleaned)]
    return LETTERS[contained[0]] if len(contained) == 1 else None


def _text(text: str) -> str | None:
    cleaned = _clean(text)
    tail = _after_cue(cleaned)
    answer = fold(tail if tail and tail.strip() else cleaned).strip(" .!\"'“”‘’")
    return answer or None


def normalise(text: str, item: Item) -> str | None:
    """The reply's answer in the item's canonical form, or None when it holds no usable one."""
    if not text or not text.strip():
        return None
    match kind(item):
        case Kind.CHOICE:
            return _choice(text, item.choices or ())
        case Kind.YES_NO:
            return _yes_no(text)
        case Kind.NUMBER:
            value = _number(text)
            return None if value is None else _canonical(value)
        case _:
            return _text(text)


def expected(item: Item) -> str | None:
    """The item's own answer, normalised; None only for an answer no reply could match (the
    loader refuses the usual ones: no letter or digit, a number beyond 10^30)."""
    return normalise(item.answer, item)


def is_correct(text: str | None, item: Item) -> bool:
    """Whether a reply (or a normalised answer) gives the item's answer; numbers may be off by
    the item's tolerance."""
    if text is None:
        return False
    given = normalise(text, item)
    if given is None:
        return False
    want = expected(item)
    if want is None:
        return False
    if kind(item) is Kind.NUMBER:
        return abs(Decimal(given) - Decimal(want)) <= Decimal(str(item.tolerance or 0))
    return given == want


def majority(answers: Sequence[str | None], rng: random.Random) -> tuple[str | None, bool]:
    """The most frequent normalised answer and whether a tie was broken (at random, by `rng`,
    among the tied answers in sorted order, so a seed reproduces it). None never wins unless
    every answer is None."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None, False
    top = max(counts.values())
    tied = sorted(a for a, n in counts.items() if n == top)
    if len(tied) == 1:
        return tied[0], False
    return rng.choice(tied), True


_RULES = {
    Kind.NUMBER: ("numbers are read from the reply (the first number after \"the answer is\" "
                  "or \"answer:\", else the last number written), with thousands commas, $ and "
                  "% dropped and 42.0 read as 42{tolerance}"),
    Kind.YES_NO: ("yes/no answers accept yes, true, correct, affirmative (and no, false, "
                  "incorrect, negative) as the reply's first word or after \"the answer is\", "
                  "else the one side a reply names (naming both, or negating, gives none)"),
    Kind.CHOICE: ("choices are matched by letter (\"B\", \"(b)\", \"b) text\", \"option B\") or "
                  "by the choice's text, case and spacing ignored"),
    Kind.TEXT: ("other answers are compared as text with case, spacing, markdown emphasis, "
                "quotes and a final full stop ignored (after \"the answer is\" when it appears)"),
}


def describe(dataset: Dataset) -> str:
    """The normalisation applied to this dataset, in one paragraph."""
    kinds = [k for k in Kind if any(kind(item) is k for item in dataset.items)]
    tolerant = any(item.tolerance for item in dataset.items)
    rules = [_RULES[k].format(tolerance=", within the item's tolerance where it gives one"
                              if tolerant else "") for k in kinds]
    return ("Replies are normalised before they are compared: " + "; ".join(rules) + ". A reply "
            "with no usable answer counts as wrong, and so does an item that got no reply.")
