"""Answer normalisation: a reply's answer and the dataset's compared as numbers, yes/no, a choice
or folded text."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence

from engine.evaluation.dataset import Dataset, Item

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_YES = frozenset({"yes", "y", "true", "correct", "affirmative"})
_NO = frozenset({"no", "n", "false", "incorrect", "negative"})


def _fold(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .!\"'`*")


def _number(text: str) -> float | None:
    found = _NUMBER.findall(text.replace("$", "").replace("%", ""))
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _is_numeric(item: Item) -> bool:
    return item.choices is None and _number(item.answer) is not None and \
        _fold(item.answer).lstrip("-$").replace(",", "").replace(".", "", 1).rstrip("%").isdigit()


def _yes_no(item: Item) -> bool:
    return item.choices is None and _fold(item.answer) in _YES | _NO


def _choice(text: str, choices: tuple[str, ...]) -> str | None:
    folded = _fold(text)
    for choice in choices:
        if folded == _fold(choice):
            return _fold(choice)
    letter = re.fullmatch(r"\(?([a-z])\)?[.):]?(?:\s.*)?", folded)
    if letter:
        index = ord(letter.group(1)) - ord("a")
        if 0 <= index < len(choices):
            return _fold(choices[index])
    hits = [c for c in choices if _fold(c) in folded]
    return _fold(hits[0]) if len(hits) == 1 else None


def normalise(text: str, item: Item) -> str | None:
    """The reply's answer in the form it is compared in, or None when it has none."""
    if not text or not text.strip():
        return None
    if item.choices is not None:
        return _choice(text, item.choices)
    if _yes_no(item):
        words = re.findall(r"[a-z]+", text.casefold())
        for word in words:
            if word in _YES:
                return "yes"
            if word in _NO:
                return "no"
        return None
    if _is_numeric(item):
        value = _number(text)
        return None if value is None or not math.isfinite(value) else _number_text(value)
    return _fold(text) or None


def is_correct(text: str | None, item: Item) -> bool:
    if text is None:
        return False
    expected = normalise(item.answer, item)
    if expected is None:
        return False
    if item.tolerance is not None and _is_numeric(item):
        got, want = _number(text), _number(expected)
        return got is not None and want is not None and abs(got - want) <= item.tolerance
    return text == expected


def describe(dataset: Dataset) -> str:
    return ("Answers are compared after normalisation: numbers are parsed (commas, $, % and a "
            "trailing .0 ignored; the last number in the reply counts; a tolerance where the "
            "item gives one), yes/no synonyms (true/false, correct/incorrect) folded to yes or "
            "no, choices matched by their letter or their text, other text compared with case "
            "and whitespace folded. A reply without a usable answer counts as wrong.")


def majority(answers: Sequence[str | None], rng: random.Random) -> tuple[str | None, bool]:
    """The most frequent answer (Nones never win unless all are None); ties drawn at random."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None, False
    top = max(counts.values())
    leaders = sorted(a for a, c in counts.items() if c == top)
    if len(leaders) == 1:
        return leaders[0], False
    return rng.choice(leaders), True
