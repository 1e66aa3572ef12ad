"""Replies as long as real models write them: prose of tens to hundreds of words woven from the
prompt's topic, lists of three to five items whatever `maxItems` says (providers do not count),
ids copied from the prompt, numbers in the ranges the field descriptions give.

Levels ("short", "typical", "verbose") set the words of each prose field and the items of each
list. A field inside a list item is written shorter than a top-level one (a claim is a sentence or
two, a summary a paragraph), so a whole `Position` lands near 150-350 / 300-700 / 600-1,200
completion tokens. Now and then prose carries `<`, `>`, `&`, `*`, `_`, a URL or an apostrophe,
so escaping on the way to Slack and HTML is exercised.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.chat_requests import Body
from tests.fakes.schema_faker import SchemaFaker


@dataclass(frozen=True, slots=True)
class Level:
    """How much a model writes: words per prose field (top level, inside list items) and items
    per list."""

    top_words: tuple[int, int]
    item_words: tuple[int, int]
    items: tuple[int, int]


LEVELS: dict[str, Level] = {
    "short": Level(top_words=(15, 40), item_words=(12, 30), items=(2, 3)),
    "typical": Level(top_words=(40, 150), item_words=(12, 40), items=(3, 5)),
    "verbose": Level(top_words=(100, 260), item_words=(25, 65), items=(3, 5)),
}
REPLY_LEVELS: tuple[str, ...] = ("minimal", *LEVELS)

_ID_IN_PROMPT = re.compile(r"\b([A-Z]{1,2}\d{1,2})\b")
_ID_EXAMPLE = re.compile(r"e\.g\.,?\s*([A-Za-z]{1,2}\d{1,2})\b")
_ID_WORD = re.compile(r"\bid\b", re.IGNORECASE)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_RANGES = (
    re.compile(rf"\bbetween\s+{_NUMBER}\s+and\s+{_NUMBER}", re.IGNORECASE),
    re.compile(rf"\bfrom\s+{_NUMBER}\s+to\s+{_NUMBER}", re.IGNORECASE),
    re.compile(rf"{_NUMBER}\s+to\s+{_NUMBER}", re.IGNORECASE),
    re.compile(rf"(?<![\w.]){_NUMBER}\s*[-–]\s*{_NUMBER}(?![\w.])"),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = frozenset("""
    about above after again against also because been before being below between both could
    does doing down during each from further have having here into itself just more most must
    never only other over same should some such than that their them then there these they this
    those through under until very were what when where which while whom will with would your
    yours reply json schema object string position claim claims answer write give return
    """.split())

_OPENERS = ("", "", "", "In practice,", "On balance,", "Put simply,", "Historically,",
            "For most teams,", "Critics argue that", "The evidence suggests that",
            "Our own numbers show that", "Even so,", "Crucially,", "In the long run,")
_SUBJECTS = ("the proposal", "the current setup", "this change", "the {t} plan",
             "a gradual rollout", "the team", "our customers", "the {t} question",
             "any serious estimate", "the migration", "the status quo", "a careful pilot",
             "the budget for {t}", "the other side")
_VERBS = ("reduces", "increases", "depends on", "outweighs", "undermines", "simplifies",
          "complicates", "improves", "shifts", "exposes", "protects", "delays", "justifies",
          "ignores", "strengthens")
_OBJECTS = ("the operational risk", "the cost of {t}", "long-term maintenance",
            "day-to-day reliability", "the {t} roadmap", "what users actually need",
            "the hidden costs", "our ability to recover", "the case for {t}",
            "the trade-offs involved", "compliance and audit work", "the on-call burden")
_TAILS = ("", "", "", "over the next two years", "for a team of our size", "when load peaks",
          "if we measure it honestly", "in most comparable deployments",
          "once the first incident hits", "more than the headline figures admit")
_SPICE = ("when p95 latency stays < 200 ms", "if the error rate goes > 1%",
          "across R&D and operations", "and that is *not* a small thing",
          "before the _real_ costs appear", "according to https://example.com/report?id=7&v=2",
          "which the team's own audit confirmed", "and the vendor's SLA doesn't cover it")
_NAMES = ("Northwind", "Blue", "Harbor", "Atlas", "Quarry", "Signal", "Ledger", "Pilot")


def topic_words(prompt: str, limit: int = 16) -> list[str]:
    """The prompt's distinctive words, in order of appearance: what a model echoes."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(prompt):
        lowered = word.lower().strip("'-")
        if lowered not in _STOP and len(lowered) > 3:
            seen.setdefault(lowered, None)
        if len(seen) >= limit:
            break
    return list(seen) or ["proposal"]


def prose(words: int, topics: list[str], rng: random.Random) -> str:
    """About `words` words of plausible English about `topics`."""
    sentences: list[str] = []
    count = 0
    while count < words:
        sentence = _sentence(topics, rng)
        sentences.append(sentence)
        count += len(sentence.split())
    text = " ".join(sentences).split()[:words]
    return " ".join(text).rstrip(",;:") + ("" if text[-1].endswith(".") else ".")


def _sentence(topics: list[str], rng: random.Random) -> str:
    tail = rng.choice(_SPICE) if rng.random() < 0.12 else rng.choice(_TAILS)
    parts = [rng.choice(_OPENERS), rng.choice(_SUBJECTS), rng.choice(_VERBS),
             rng.choice(_OBJECTS), tail]
    text = " ".join(p for p in parts if p).replace("{t}", "{}")
    text = text.format(*(rng.choice(topics) for _ in range(text.count("{}"))))
    return text[0].upper() + text[1:] + "."


def described_range(description: str) -> tuple[float, float] | None:
    """The range a field's description gives ("from 1 to 10", "1-10", "between 0 and 1")."""
    for pattern in _RANGES:
        found = pattern.search(description)
        if found:
            low, high = float(found[1]), float(found[2])
            return (low, high) if low <= high else (high, low)
    return None


class RealisticFaker(SchemaFaker):
    """An instance of a JSON schema as a real model writes one, at a `Level`."""

    def __init__(self, root: Body, *, prompt: str, level: Level, rng: random.Random) -> None:
        super().__init__(root, hint="", rng=rng)
        self._level = level
        self._topics = topic_words(prompt)
        self._prompt_ids = list(dict.fromkeys(_ID_IN_PROMPT.findall(prompt)))
        self._depth = 0
        self.prose: set[str] = set()  # the free text written: what an order to "say X" replaces

    def _by_type(self, kind: str, schema: Body, name: str) -> Any:
        if kind == "array":
            return self._array(schema, name)
        if kind == "boolean":
            return self._rng.random() < 0.5
        return super()._by_type(kind, schema, name)

    def _array(self, schema: Body, name: str) -> list[Any]:
        count = max(int(schema.get("minItems", 0)), self._rng.randint(*self._level.items))
        item_name = name[:-1] if name.endswith("s") else name
        self._depth += 1
        try:
            return [self.make(schema.get("items", {}), item_name) for _ in range(count)]
        finally:
            self._depth -= 1

    def _integer(self, schema: Body) -> int:
        low, high = self._range(schema, default=(1.0, 10.0), step=1.0)
        return self._rng.randint(int(low), int(high))

    def _number(self, schema: Body) -> float:
        low, high = self._range(schema, default=(0.0, 1.0), step=0.0)
        if "exclusiveMinimum" in schema or "exclusiveMaximum" in schema:
            return (low + high) / 2
        return min(max(round(self._rng.uniform(low, high), 2), low), high)

    @staticmethod
    def _range(schema: Body, *, default: tuple[float, float], step: float
               ) -> tuple[float, float]:
        bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        if any(key in schema for key in bounds):
            low = schema.get("minimum", schema.get("exclusiveMinimum", default[0] - step) + step)
            high = schema.get("maximum", schema.get("exclusiveMaximum", default[1] + step) - step)
            return float(low), float(max(low, high))
        return described_range(str(schema.get("description", ""))) or default

    def _string(self, schema: Body, name: str) -> str:
        description = str(schema.get("description", ""))
        if schema.get("format") in ("date-time", "date", "uri", "url"):
            return super()._string(schema, name)
        if name == "id" or name.endswith("_id") or _ID_WORD.search(description):
            return self._identifier(description)
        if name == "name":
            words = self._rng.sample(_NAMES, self._rng.randint(1, 3))
            return " ".join(words)
        low, high = self._level.item_words if self._depth else self._level.top_words
        text = prose(self._rng.randint(low, high), self._topics, self._rng)
        self.prose.add(text)
        return text

    def _identifier(self, description: str) -> str:
        """An id like the description's example, one the prompt uses when it can."""
        example = _ID_EXAMPLE.search(description)
        prefix = re.sub(r"\d", "", example[1]) if example else ""
        same = [i for i in self._prompt_ids if prefix and i.startswith(prefix)]
        pool = same or self._prompt_ids
        if pool:
            return self._rng.choice(pool)
        return f"{prefix or 'C'}{self._rng.randint(1, 5)}"
