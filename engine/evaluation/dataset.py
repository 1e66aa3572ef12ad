"""Evaluation datasets: JSON lines of `{"question", "answer"}` (optional `id`, `choices`,
`tolerance`), read and bounded at the border."""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import dataclass
from typing import Any

MAX_QUESTION_CHARS = 8_000
MAX_ITEMS = 10_000


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    answer: str
    choices: tuple[str, ...] | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    items: tuple[Item, ...]
    source: str


class DatasetError(ValueError):
    """A dataset that cannot be read: one line naming file:line and what is wrong."""


def _answer_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _item(data: Any, where: str, number: int) -> Item:
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: a line must be a JSON object")
    question, answer = data.get("question"), _answer_text(data.get("answer"))
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{where}: `question` must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise DatasetError(f"{where}: the question has {len(question)} characters; the limit "
                           f"is {MAX_QUESTION_CHARS}")
    if answer is None:
        raise DatasetError(f"{where}: `answer` must be a string, a number or a boolean")
    choices = data.get("choices")
    if choices is not None:
        if (not isinstance(choices, list) or not 2 <= len(choices) <= 26
                or not all(isinstance(c, str) and c.strip() for c in choices)
                or len({c.strip().casefold() for c in choices}) != len(choices)):
            raise DatasetError(f"{where}: `choices` must be 2 to 26 distinct strings")
        choices = tuple(c.strip() for c in choices)
    tolerance = data.get("tolerance")
    if tolerance is not None and (isinstance(tolerance, bool)
                                  or not isinstance(tolerance, int | float)
                                  or not math.isfinite(tolerance) or tolerance < 0):
        raise DatasetError(f"{where}: `tolerance` must be a finite number >= 0")
    raw_id = data.get("id", number)
    if not isinstance(raw_id, str | int) or isinstance(raw_id, bool) or not str(raw_id).strip():
        raise DatasetError(f"{where}: `id` must be a non-empty string or an integer")
    return Item(id=str(raw_id).strip(), question=question.strip(), answer=answer,
                choices=choices, tolerance=None if tolerance is None else float(tolerance))


def load_jsonl(path: pathlib.Path, *, limit: int | None = None) -> Dataset:
    """Read a dataset; ids default to the line number, duplicates are refused."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    items: list[Item] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not JSON ({exc.msg})") from None
        item = _item(data, where, number)
        if item.id in seen:
            raise DatasetError(f"{where}: the id {item.id!r} is used twice")
        seen.add(item.id)
        items.append(item)
        if len(items) > MAX_ITEMS:
            raise DatasetError(f"{where}: more than {MAX_ITEMS} items")
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise DatasetError(f"{path}: no items")
    return Dataset(name=path.stem, items=tuple(items), source=str(path))
