"""Two encodings made cheaper without changing a byte: a step's prompt hash (pydantic-core
encodes the strings) and `jsonable` (plain data is copied by a walk instead of a trip through
JSON text). Each is checked against the way it was computed before."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from typing import Any

import pytest

from engine.core.step_outcome import prompt_hash
from engine.domain import canonical_json, sha256
from engine.provider.llm import Prompt
from storage import models
from storage.models import jsonable

EVERY_ESCAPE = "".join(chr(c) for c in range(0x00, 0x80)) + "\u0085\u00a0\u2028\u2029\ufeff"
TEXTS = [
    "", "plain words", EVERY_ESCAPE, 'quote " backslash \\ slash / tab \t newline \n',
    "accents é ü ß, dashes — – and “curly quotes”", "astral 🏳️‍🌈 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U000e0041",
    "long " * 5000 + "end", "\x00 a NUL and \x7f DEL",
]


def _old_prompt_hash(prompt: Prompt) -> str:
    return sha256(canonical_json({"system": prompt.system, "user": prompt.user}))


@pytest.mark.parametrize("system", TEXTS[:4])
@pytest.mark.parametrize("user", TEXTS)
def test_the_prompt_hash_is_the_canonical_json_hash(system: str, user: str) -> None:
    prompt = Prompt(system=system, user=user)
    assert prompt_hash(prompt) == _old_prompt_hash(prompt)


def test_a_prompt_with_a_lone_surrogate_fails_as_before() -> None:
    prompt = Prompt(system="s", user="half a pair \ud800")
    with pytest.raises(UnicodeEncodeError):
        _old_prompt_hash(prompt)
    with pytest.raises(UnicodeEncodeError):
        prompt_hash(prompt)


def _old_jsonable(value: Any) -> Any:
    text = json.dumps(value, default=str, ensure_ascii=False)
    if "\\u0000" in text:
        text = models._JSON_NUL.sub(r"\1", text)
    return json.loads(text, parse_constant=models._null)


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class Odd(StrEnum):
    NUL = "a\x00b"


class Shouting(str):
    """A str subclass whose str() is not its text: JSON writes its text."""

    def __str__(self) -> str:
        return self.upper()


VALUES: list[Any] = [
    None, True, False, 0, -1, 2**62, 10**5000 // 10**4990, 1.5, -0.0, 1e308, "", *TEXTS,
    [], {}, (1, "two", 3.0), {"b": 1, "a": [1, {"z": None, "y": "x"}], "c": (True,)},
    {"summary": "a reply", "claims": [{"claim": "c", "evidence": "e" * 3000}] * 4},
    # not plain: each goes the JSON way, and must come out as it did
    math.nan, math.inf, {"score": -math.inf}, "NUL \x00 inside", {"k\x00": 1},
    {1: "int key", "1": "str key"}, {None: 1, True: 2, 2.5: 3}, Colour.RED, Level.HIGH,
    {"at": datetime(2026, 11, 28, 5, 0, tzinfo=UTC)}, [b"bytes"], {"set": {1}},
    {"nested": [{"deep": [math.nan, "\x00", Colour.RED]}]},
    # str subclasses (an event's roles, sides and statuses): their text, by the walk
    {Colour.RED: [Colour.RED, {"k": Colour.RED}], "role": Colour.RED}, Shouting("quiet"),
    {Shouting("key"): Shouting("value")}, Odd.NUL, {Odd.NUL: 1}, {"deep": [Odd.NUL]},
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:40] for v in VALUES])
def test_jsonable_gives_what_the_trip_through_json_gave(value: Any) -> None:
    expected = _old_jsonable(value)
    got = jsonable(value)
    assert json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
    assert type(got) is type(expected)
    assert _types(got) == _types(expected)   # a plain str where JSON gave one, at every depth


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {(type(k), k): _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


def test_jsonable_copies_containers() -> None:
    value = {"list": [1, {"a": "b"}]}
    copied = jsonable(value)
    assert copied == value
    assert copied is not value and copied["list"] is not value["list"]
    assert copied["list"][1] is not value["list"][1]


def test_jsonable_fails_as_before_on_what_json_refuses() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        _old_jsonable(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        jsonable(cycle)
    huge = 10**5000
    with pytest.raises(ValueError):
        _old_jsonable(huge)
    with pytest.raises(ValueError):
        jsonable(huge)
