"""Question sets with known answers, one JSON object a line:

    {"id": "q1", "question": "What is 6*7?", "answer": 42, "tolerance": 0.5}
    {"question": "Which is a prime?", "choices": ["4", "9", "7"], "answer": "C"}
    {"question": "Is 91 prime?", "answer": false}

`question` and `answer` are required; `id` defaults to the line number, `choices` (2 to 26
distinct texts) makes an item multiple choice (the answer is a letter or one choice's text), and
`tolerance` (finite, >= 0) lets a numeric answer be off by that much. Other keys are ignored.
Blank lines are skipped. Any problem is a `DatasetError` whose message is one line naming
file:line and what is wrong; nothing half-read is returned.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.characters import unstorable
from engine.errors import InvalidRequest

MAX_QUESTION_CHARS = 8_000
MAX_ITEMS = 10_000
MAX_ANSWER_CHARS = 1_000
MAX_NUMBER = 10**30         # answers.py reads no number beyond this either
MIN_CHOICES, MAX_CHOICES = 2, 26
MAX_DEPTH = 64              # an item uses 2 (an object, its choices); deeper is hostile
# a string (with its escapes) or one bracket: brackets inside strings are not structure
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Item:
    """One question; `answer` is the dataset's text (numbers as their JSON text, booleans as
    "yes"/"no")."""

    id: str
    question: str
    answer: str
    choices: tuple[str, ...] | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class Dataset:
    """A named, ordered set of items; `source` is the file's name (never a server path, which
    pages would show) or "builtin:NAME seed=S n=N"."""

    name: str
    items: tuple[Item, ...]
    source: str


class DatasetError(InvalidRequest, ValueError):
    """A dataset that cannot be used; the message is one line: "file:line: what is wrong". An
    InvalidRequest too, so every surface says it as the request's error."""


def shown_source(source: str) -> str:
    """Where a dataset came from, as pages and the API show it: a builtin set as it is, a file
    by its name only (runs stored before names were kept hold the server's absolute path)."""
    if source.startswith("builtin:"):
        return source
    return re.split(r"[\\/]", source.rstrip("/\\"))[-1] or "dataset"


def fold(text: str) -> str:
    """Case and whitespace folded: how texts are compared (choices, free-text answers)."""
    return " ".join(text.split()).casefold()


def _answer_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) >= MAX_NUMBER:
            raise ValueError("'answer' must be a finite number below 10^30")
        return str(value) if isinstance(value, int) else repr(value)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("'answer' is empty")
        if len(value) > MAX_ANSWER_CHARS:
            raise ValueError(f"'answer' is longer than {MAX_ANSWER_CHARS:,} characters")
        if not any(ch.isalnum() for ch in value):
            raise ValueError("'answer' has no letter or digit: no reply could match it")
        return value.strip()
    raise ValueError("'answer' must be a string, a number or true/false")


def _question(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("'question' is missing or empty")
    if len(value) > MAX_QUESTION_CHARS:
        raise ValueError(f"'question' is {len(value):,} characters; at most "
                         f"{MAX_QUESTION_CHARS:,} are allowed")
    return value.strip()


def _choices(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
        raise ValueError("'choices' must be a list of non-empty texts")
    if not MIN_CHOICES <= len(value) <= MAX_CHOICES:
        raise ValueError(f"'choices' has {len(value)} entries; {MIN_CHOICES} to {MAX_CHOICES} "
                         "are allowed")
    if len({fold(c) for c in value}) != len(value):
        raise ValueError("'choices' are not distinct")
    return tuple(c.strip() for c in value)


def _tolerance(value: Any, answer: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("'tolerance' must be a number")
    if not math.isfinite(value) or value < 0:
        raise ValueError("'tolerance' must be a finite number >= 0")
    if isinstance(answer, bool) or not isinstance(answer, int | float | str):
        raise ValueError("'tolerance' needs a numeric answer")
    try:
        float(str(answer).strip().strip("$%").replace(",", ""))
    except ValueError:
        raise ValueError("'tolerance' needs a numeric answer") from None
    return float(value)


def _check_choice_answer(answer: str, choices: tuple[str, ...]) -> None:
    letter = answer.strip("() .").upper()
    if len(letter) == 1 and letter in LETTERS[: len(choices)]:
        return
    if fold(answer) in {fold(c) for c in choices}:
        return
    raise ValueError(f"'answer' {answer[:40]!r} is neither a letter A-{LETTERS[len(choices) - 1]} "
                     "nor one of the choices")


def _item_id(value: Any, line: int) -> str:
    if value is None:
        return str(line)
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError("'id' must be a non-empty text or an integer")
    text = str(value).strip()
    if len(text) > 200:
        raise ValueError("'id' is longer than 200 characters")
    return text


def _depth(raw: str) -> int:
    """How deeply the line's arrays and objects nest (outside strings), measured before the
    JSON parser recurses into them."""
    depth = deepest = 0
    for token in _STRUCTURE.findall(raw):
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _check_text(field: str, value: str) -> str:
    """`value`, unless it holds what no database stores (a lone surrogate, NUL)."""
    problem = unstorable(value)
    if problem is not None:
        raise ValueError(f"{field!r}: {problem}")
    return value


def _load(raw: str) -> Any:
    if "\x00" in raw:
        raise ValueError("the line holds a NUL byte; a dataset is UTF-8 text")
    if _depth(raw) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep; an item is one flat "
                         "object")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:   # the depth check above should have said so first
        raise ValueError("nested too deeply") from None


def parse_item(raw: str, line: int) -> Item:
    """One line's item; ValueError (without the file:line prefix) when it is not one."""
    data = _load(raw)
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    for key in ("id", "question", "answer"):
        if isinstance(data.get(key), str):
            _check_text(key, data[key])
    if isinstance(data.get("choices"), list):
        for choice in data["choices"]:
            if isinstance(choice, str):
                _check_text("choices", choice)
    question = _question(data.get("question"))
    if "answer" not in data:
        raise ValueError("'answer' is missing")
    answer = _answer_text(data["answer"])
    choices = _choices(data.get("choices"))
    if choices is not None:
        _check_choice_answer(answer, choices)
    tolerance = _tolerance(data.get("tolerance"), data["answer"])
    return Item(id=_item_id(data.get("id"), line), question=question, answer=answer,
                choices=choices, tolerance=tolerance)


def parse_lines(lines: Iterable[str], *, origin: str, name: str, source: str,
                limit: int | None = None) -> Dataset:
    """Items from JSON lines; `origin` names the file in error messages."""
    if limit is not None and limit < 1:
        raise DatasetError(f"{origin}: the limit must be at least 1 (got {limit})")
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(items) == MAX_ITEMS:
            raise DatasetError(f"{origin}:{number}: more than {MAX_ITEMS:,} items; split the set "
                               "or pass a limit")
        try:
            item = parse_item(raw, number)
        except ValueError as exc:
            raise DatasetError(f"{origin}:{number}: {exc}") from None
        if item.id in seen:
            raise DatasetError(f"{origin}:{number}: duplicate id {item.id[:60]!r} (first on line "
                               f"{seen[item.id]})")
        seen[item.id] = number
        items.append(item)
        if limit is not None and len(items) == limit:
            break
    if not items:
        raise DatasetError(f"{origin}: no items (each line is a JSON object with 'question' and "
                           "'answer')")
    return Dataset(name=name, items=tuple(items), source=source)


def _decoded(lines: Iterable[bytes], origin: str) -> Iterator[str]:
    """Each line as text; a line that is not UTF-8 is refused with its number."""
    for number, raw in enumerate(lines, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{origin}:{number}: not UTF-8 text (at byte {exc.start + 1})"
                               ) from None


def load_jsonl(path: pathlib.Path, *, limit: int | None = None) -> Dataset:
    """The dataset in a JSON-lines file (at most `limit` items, in file order)."""
    try:
        with path.open("rb") as handle:
            return parse_lines(_decoded(handle, str(path)), origin=str(path), name=path.stem,
                               source=path.name, limit=limit)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read it ({exc.strerror or exc})") from None
