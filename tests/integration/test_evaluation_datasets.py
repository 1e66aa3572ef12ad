"""Reading question sets from files: engine/evaluation/dataset.py load_jsonl and the decision set
shipped as package data (engine/evaluation/builtin.py)."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import pytest

from engine.errors import InvalidRequest
from engine.evaluation.answers import Kind, is_correct, kind
from engine.evaluation.builtin import BUILTINS, decisions, decisions_sample
from engine.evaluation.dataset import MAX_ITEMS, DatasetError, Item, load_jsonl

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, *lines: str | dict[str, object]) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line)
                              for line in lines) + "\n", encoding="utf-8")
    return path


def test_a_dataset_file_with_every_kind_of_item(tmp_path: Path) -> None:
    path = write(tmp_path,
                 {"question": "What is 6*7?", "answer": 42},
                 "",
                 {"id": "pi", "question": "Pi to two places?", "answer": 3.14, "tolerance": 0.01},
                 {"id": 7, "question": "Which is a city?", "choices": ["a river", "Paris"],
                  "answer": "B", "topic": "ignored"},
                 {"question": "Is 91 prime?", "answer": False},
                 {"question": "Capital of France?", "answer": "  Paris "})
    dataset = load_jsonl(path)
    assert dataset.name == "set" and dataset.source == "set.jsonl"   # never the server path
    assert dataset.items == (
        Item(id="1", question="What is 6*7?", answer="42"),
        Item(id="pi", question="Pi to two places?", answer="3.14", tolerance=0.01),
        Item(id="7", question="Which is a city?", answer="B", choices=("a river", "Paris")),
        Item(id="5", question="Is 91 prime?", answer="no"),
        Item(id="6", question="Capital of France?", answer="Paris"),
    )
    assert [kind(item) for item in dataset.items] == [Kind.NUMBER, Kind.NUMBER, Kind.CHOICE,
                                                      Kind.YES_NO, Kind.TEXT]
    assert all(is_correct(item.answer, item) for item in dataset.items)


def test_a_limit_keeps_the_first_items(tmp_path: Path) -> None:
    path = write(tmp_path, *({"question": f"q{i}", "answer": i} for i in range(5)))
    assert [item.id for item in load_jsonl(path, limit=2).items] == ["1", "2"]
    with pytest.raises(DatasetError, match="the limit must be at least 1"):
        load_jsonl(path, limit=0)


@pytest.mark.parametrize(("lines", "message"), [
    (['{"question": "q", "answer": 1', ], r":1: not valid JSON \("),
    (['{"question": "q", "answer": 1}', '[1, 2]'], ":2: a line must be a JSON object"),
    (['{"answer": 1}'], ":1: 'question' is missing or empty"),
    (['{"question": "  ", "answer": 1}'], ":1: 'question' is missing or empty"),
    (['{"question": "q"}'], ":1: 'answer' is missing"),
    (['{"question": "q", "answer": null}'], ":1: 'answer' must be a string, a number or true"),
    (['{"question": "q", "answer": ""}'], ":1: 'answer' is empty"),
    (['{"question": "q", "answer": "?!"}'], ":1: 'answer' has no letter or digit"),
    (['{"question": "q", "answer": 1e31}'], r":1: 'answer' must be a finite number below 10\^30"),
    (['{"id": "a", "question": "q", "answer": 1}', '{"id": "a", "question": "r", "answer": 2}'],
     r":2: duplicate id 'a' \(first on line 1\)"),
    (['{"question": "q", "answer": 1}', '{"id": "1", "question": "r", "answer": 2}'],
     r":2: duplicate id '1' \(first on line 1\)"),
    ([json.dumps({"question": "x" * 8_001, "answer": 1})],
     ":1: 'question' is 8,001 characters; at most 8,000 are allowed"),
    (['{"question": "q", "answer": 1, "tolerance": NaN}'], ":1: 'tolerance' must be a finite"),
    (['{"question": "q", "answer": 1, "tolerance": Infinity}'], ":1: 'tolerance' must be a fin"),
    (['{"question": "q", "answer": 1, "tolerance": -0.5}'], ":1: 'tolerance' must be a finite"),
    (['{"question": "q", "answer": "Paris", "tolerance": 1}'], ":1: 'tolerance' needs a numeric"),
    (['{"question": "q", "answer": 1, "tolerance": "1"}'], ":1: 'tolerance' must be a number"),
    (['{"question": "q", "answer": "A", "choices": ["x"]}'], ":1: 'choices' has 1 entries"),
    (['{"question": "q", "answer": "A", "choices": ["x", "X "]}'], ":1: 'choices' are not dis"),
    (['{"question": "q", "answer": "C", "choices": ["x", "y"]}'], ":1: 'answer' 'C' is neither"),
    (['{"question": "q", "answer": 1, "id": true}'], ":1: 'id' must be a non-empty text"),
    (['', '   '], ": no items"),
    (["[" * 200_000 + "]" * 200_000], ":1: nested more than 64 levels deep"),
    (['{"question": "q", "answer": 1, "x": ' + "{\"a\": " * 200_000 + "1" + "}" * 200_001],
     ":1: nested more than 64 levels deep"),
    (['{"question": "q", "answer": 1, "x": "[[[[ {{{{" }', '{"question": "q[", "answer": ' +
      "[" * 100], ":2: nested more than 64"),   # brackets inside strings are not nesting
    (['{"question": "\\ud800 what?", "answer": 1}'], ":1: 'question': it holds a character "
     "that is not text"),
    (['{"question": "q", "answer": "x\\udfff"}'], ":1: 'answer': it holds a character"),
    (['{"id": "\\udc00", "question": "q", "answer": 1}'], ":1: 'id': it holds a character"),
    (['{"question": "q", "answer": "A", "choices": ["x", "\\ud83d"]}'], ":1: 'choices': it hol"),
    (['{"question": "a\\u0000b", "answer": 1}'], ":1: 'question': it holds a NUL character"),
    (['{"question": "a\x00b", "answer": 1}'], ":1: the line holds a NUL byte"),
])
def test_a_bad_line_is_one_line_naming_file_and_line(tmp_path: Path, lines: list[str],
                                                     message: str) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(DatasetError, match=message) as raised:
        load_jsonl(path)
    text = str(raised.value)
    assert text.startswith(str(path)) and "\n" not in text
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, InvalidRequest)


def test_too_many_items_are_refused(tmp_path: Path) -> None:
    line = '{"question": "q", "answer": 1}\n'
    path = tmp_path / "big.jsonl"
    path.write_text("".join(line.replace('"q"', f'"q{i}"') for i in range(MAX_ITEMS + 1)),
                    encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"big.jsonl:{MAX_ITEMS + 1}: more than 10,000 items"):
        load_jsonl(path)
    assert len(load_jsonl(path, limit=MAX_ITEMS).items) == MAX_ITEMS


def test_unreadable_files_are_one_line_too(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"missing.jsonl: cannot read it \(No such file"):
        load_jsonl(tmp_path / "missing.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"question": "\xff\xfe", "answer": 1}\n')
    with pytest.raises(DatasetError, match=r"binary\.jsonl:1: not UTF-8 text \(at byte 15\)"):
        load_jsonl(binary)
    with pytest.raises(DatasetError, match="cannot read it"):
        load_jsonl(tmp_path)                      # a directory


def test_the_decision_set_ships_yes_no_items() -> None:
    dataset = decisions()
    assert dataset.name == "decisions" and dataset.source == "builtin:decisions"
    assert 20 <= len(dataset.items) <= 30
    assert all(kind(item) is Kind.YES_NO for item in dataset.items)
    answers = [item.answer for item in dataset.items]
    assert set(answers) == {"yes", "no"} and abs(answers.count("yes") - answers.count("no")) <= 2
    assert len({item.id for item in dataset.items}) == len(dataset.items)
    assert next(i for i in dataset.items if i.id == "mersenne-31").answer == "yes"
    assert next(i for i in dataset.items if i.id == "tcp-order").answer == "yes"


def test_a_sample_of_the_decision_set_is_seeded() -> None:
    whole = decisions()
    sample = decisions_sample(5, 3)
    assert len(sample.items) == 5 and sample.source == "builtin:decisions seed=3 n=5"
    assert sample == decisions_sample(5, 3) and set(sample.items) <= set(whole.items)
    order = [whole.items.index(item) for item in sample.items]
    assert order == sorted(order)
    assert BUILTINS["decisions"](100, 1) == whole


def test_the_decision_set_is_package_data_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["engine.evaluation"]
    package = ROOT / "engine" / "evaluation"
    shipped = [p.relative_to(package).as_posix() for p in (package / "data").iterdir()]
    assert shipped and all(any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
                           for name in shipped)


def test_a_tolerance_on_an_answer_written_with_dollars_and_commas(tmp_path: Path) -> None:
    path = write(tmp_path, {"question": "Price?", "answer": "$1,234.50", "tolerance": 1})
    item = load_jsonl(path).items[0]
    assert item.tolerance == 1.0 and kind(item) is Kind.NUMBER
    assert is_correct("about $1,235", item) and not is_correct("1,236", item)
