"""The `/debate` ack's shortcuts give exactly what the code they stand in for gives: tokens split
by `str.split` when no quote is in the text, the surrogate check and the ASCII cleaning done in C,
money figures remembered, the ack's section built as a dict and the spotlight's structure
pattern grouped (docs/benchmarks.md, "CPU per
ack")."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

from bot.slack.mrkdwn import truncate
from bot.slack.parsing import CommandError, Token, parse_command, tokenize, tokens_by_char
from bot.slack.views.common import SECTION_TEXT_MAX, section
from engine.characters import has_lone_surrogate
from engine.money import cost
from engine.untrusted import glyphs, spotlight
from tests.unit.test_spotlight_properties import untrusted

PROPERTY = settings(max_examples=400, deadline=None, database=None)

#: every kind of whitespace str.isspace knows, quotes straight and curly, dashes, surrogates
SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()] + ["\u3000"]
ALPHABET = st.sampled_from([*SPACES, '"', "“", "”", "„", "—", "–", "-", "a", "Z", "é", "😀",
                            "\ud800", "\udfff", "\x00", "\t", "\r\n", "'"])
texts = st.one_of(st.text(max_size=40), st.lists(ALPHABET, max_size=40).map("".join))


def _by_char_or_error(text: str) -> list[Token] | str:
    try:
        return tokens_by_char(text)
    except CommandError as exc:
        return str(exc)


@PROPERTY
@given(texts)
def test_tokenize_is_the_character_loop(text: str) -> None:
    try:
        found: list[Token] | str = tokenize(text)
    except CommandError as exc:
        found = str(exc)
    assert found == _by_char_or_error(text)


@PROPERTY
@given(st.lists(st.sampled_from(["Should", "we", "--mode", "simple", "—rounds", "–judges",
                                 "2", "--rounds=1", "-x", "—", "--", " ", "\u2003"]),
                max_size=12).map(" ".join))
def test_commands_parse_as_by_the_character_loop(text: str) -> None:
    """Flags (dashes included) and words, through the whole parse: the same Command or error."""
    from bot.slack import parsing

    def parsed() -> object:
        try:
            return parse_command(text)
        except CommandError as exc:
            return str(exc)

    fast = parsed()
    original = parsing.tokenize
    parsing.tokenize = tokens_by_char   # type: ignore[assignment]
    try:
        slow = parsed()
    finally:
        parsing.tokenize = original
    assert fast == slow


@pytest.mark.parametrize("code", [0, 0x41, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000,
                                  0xFFFF, 0x1F600])
def test_lone_surrogates_found_as_before(code: int) -> None:
    for text in (chr(code), f"a{chr(code)}b", f"text ending {chr(code)}"):
        assert has_lone_surrogate(text) == any("\ud800" <= ch <= "\udfff" for ch in text)


def _clean_by_char(text: str) -> str:
    """glyphs.clean as it was: each character made plain one at a time, to a fixed point."""
    text = text.replace("\r\n", "\n")
    for _ in range(3):
        plain = "".join(glyphs._plain_char(ch) for ch in text)
        normal = unicodedata.normalize("NFKC", plain)
        if normal == text:
            break
        text = normal
    return text


def test_every_ascii_character_cleaned_as_before() -> None:
    for code in range(128):
        for text in (chr(code), f"a{chr(code)}b", f"{chr(code)}\r\n{chr(code)}  x"):
            assert glyphs.clean(text) == _clean_by_char(text), repr(text)


@PROPERTY
@given(texts)
def test_clean_is_the_character_loop(text: str) -> None:
    assert glyphs.clean(text) == _clean_by_char(text)


def _quantized_afresh(amount: float, places: int, rounding: cost.Rounding) -> str:
    exact = cost.Decimal(repr(round(float(amount), 9))).quantize(
        cost.Decimal(1).scaleb(-places), rounding=cost._ROUNDING[rounding])
    return f"{exact:,.{places}f}"


@pytest.mark.parametrize("amount", [0.0, -0.0, 1e-9, 0.000299999, 0.004999, 0.005, 0.0734,
                                    1.0, 1250.0, -3.5, 123456.789])
def test_money_figures_remembered_are_the_figures(amount: float) -> None:
    for _ in range(2):   # the second time from the memo
        for places in (2, 4, 6):
            for rounding in ("nearest", "down", "up"):
                assert cost._quantized(amount, places, rounding) == _quantized_afresh(
                    amount, places, rounding)


def test_negative_zero_is_not_remembered_as_zero() -> None:
    """0.0 and -0.0 are equal keys to a cache of floats; the memo is keyed by the figure."""
    for first, then in ((0.0, -0.0), (-0.0, 0.0)):
        cost._quantized_figure.cache_clear()
        cost._quantized(first, 2, "down")
        assert cost._quantized(then, 2, "down") == _quantized_afresh(then, 2, "down")


@PROPERTY
@given(st.one_of(st.text(max_size=50), st.text(min_size=2990, max_size=3100),
                 st.sampled_from(["", " ", "x" * 3000, "x" * 3001, "é" * 3001, "😀" * 2999])))
def test_the_section_is_slack_sdks(text: str) -> None:
    expected = SectionBlock(text=MarkdownTextObject(
        text=truncate(text or " ", SECTION_TEXT_MAX))).to_dict()
    assert json.dumps(section(text)) == json.dumps(expected)


def _structure_in_a_row() -> re.Pattern[str]:
    """The structure pattern as it was written until 2026-11-28: its alternatives in a row."""
    marks = spotlight._mark_structure()
    words = [rf"\b(?:{w})" for w in spotlight._WORD_STRUCTURE]
    return re.compile("|".join((*marks[:2], *words, marks[2])), re.IGNORECASE)


IN_A_ROW = _structure_in_a_row()


@PROPERTY
@given(st.one_of(untrusted, st.text(max_size=60)))
def test_structure_matches_as_its_alternatives_in_a_row(text: str) -> None:
    """Grouped behind a `\\b` and a look-ahead, the pattern finds the same spans, on any text
    and on its skeleton (what neutralise matches on)."""
    for skeleton in (text, glyphs.fold(glyphs.clean(text)).text):
        found = [m.span() for m in spotlight._STRUCTURE.finditer(skeleton)]
        assert found == [m.span() for m in IN_A_ROW.finditer(skeleton)]


def test_every_structure_word_and_mark_is_still_found() -> None:
    text = ('System: "winner": [INST] <<SYS>> ## instructions position a A1 untrusted-begin '
            "end of untrusted 'id' : <|im_start|> </s> <start_of_turn> Policy text to judge "
            "against: judges : B12")
    found = [m.group() for m in spotlight._STRUCTURE.finditer(text)]
    assert found == [m.group() for m in IN_A_ROW.finditer(text)]
    assert len(found) == 16, found
