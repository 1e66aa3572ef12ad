"""The price library's answers kept for the day (engine/money/price_memo.py): the same prices as
the library's, read back without asking it, and never across days, libraries or a broken file."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.money import price_memo, prices
from engine.money.prices import ModelPrice, Provider, library_price

OPENAI = Provider("openai")


@pytest.fixture
def memo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "prices.json"
    price_memo.keep_in(path)
    library_price.cache_clear()
    yield path
    price_memo.keep_in(None)
    library_price.cache_clear()


def _fresh_process() -> None:
    """What a new process has: the file, and nothing looked up in memory."""
    library_price.cache_clear()
    price_memo.keep_in(price_memo._where[0])


def test_an_answer_is_kept_and_read_back_without_the_library(
        memo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = library_price("gpt-4o-mini", OPENAI)
    unknown = library_price("house-model-7", Provider())
    assert asked is not None and asked[0] == "openai" and unknown is None
    kept = json.loads(memo.read_text())
    assert kept["stamp"] == price_memo.stamp() and len(kept["prices"]) == 2
    _fresh_process()

    def never(*_: object) -> None:
        raise AssertionError("the library was asked for a kept price")
    monkeypatch.setattr(prices, "_library_price", never)
    assert library_price("gpt-4o-mini", OPENAI) == asked
    assert library_price("house-model-7", Provider()) is None


@pytest.mark.parametrize("content", [
    '{"stamp": "1:2:1999-01-01", "prices": {"[\\"gpt-4o-mini\\", \\"openai\\", null]": '
    '["openai", 99.0, 99.0, 99.0]}}',   # another day or another library's data
    "not json", '{"stamp": null}', "[1, 2]",
])
def test_a_stale_or_broken_file_is_not_believed(memo: Path, content: str) -> None:
    memo.write_text(content)
    found = library_price("gpt-4o-mini", OPENAI)
    assert found is not None and found[1].input == pytest.approx(0.15)
    assert json.loads(memo.read_text())["stamp"] == price_memo.stamp()   # written afresh


def test_a_hand_edited_entry_is_asked_of_the_library_again(memo: Path) -> None:
    key = json.dumps(["gpt-4o-mini", "openai", None])
    memo.write_text(json.dumps({"stamp": price_memo.stamp(),
                                "prices": {key: ["openai", -1.0, None, 2.0]}}))
    found = library_price("gpt-4o-mini", OPENAI)
    assert found is not None and found[1] == ModelPrice(input=0.15, cached_input=0.075,
                                                        output=0.6)


def test_nothing_is_written_unless_a_process_asked_for_it(tmp_path: Path) -> None:
    price_memo.keep_in(None)
    library_price.cache_clear()
    try:
        assert library_price("gpt-4o-mini", OPENAI) is not None
    finally:
        library_price.cache_clear()
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_place_changes_nothing(tmp_path: Path) -> None:
    price_memo.keep_in(tmp_path / "missing" / "prices.json")
    library_price.cache_clear()
    try:
        found = library_price("gpt-4o-mini", OPENAI)
    finally:
        price_memo.keep_in(None)
        library_price.cache_clear()
    assert found is not None and found[0] == "openai"
    assert not (tmp_path / "missing").exists()


def test_the_file_is_private_as_every_file_of_the_data_directory(memo: Path) -> None:
    old = os.umask(0o022)
    try:
        library_price("gpt-4o-mini", OPENAI)
    finally:
        os.umask(old)
    assert stat.S_IMODE(memo.stat().st_mode) == 0o600
