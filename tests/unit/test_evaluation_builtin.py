"""engine/evaluation/builtin.py: Du et al.'s arithmetic task, generated from a seed."""

from __future__ import annotations

import re

import pytest

from engine.evaluation.answers import Kind, is_correct, kind
from engine.evaluation.builtin import BUILTINS, arithmetic
from engine.evaluation.dataset import DatasetError

QUESTION = re.compile(r"What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?")


def test_arithmetic_follows_du_et_al() -> None:
    dataset = arithmetic(200, seed=7)
    assert dataset.name == "arithmetic" and dataset.source == "builtin:arithmetic seed=7 n=200"
    assert [item.id for item in dataset.items] == [str(i) for i in range(1, 201)]
    seen: set[int] = set()
    for item in dataset.items:
        found = QUESTION.fullmatch(item.question)
        assert found is not None, item.question
        a, b, c, d, e, f = (int(x) for x in found.groups())
        seen.update((a, b, c, d, e, f))
        assert item.answer == str(a + b * c + d - e * f)
        assert kind(item) is Kind.NUMBER and is_correct(item.answer, item)
    assert min(seen) == 0 and max(seen) == 30          # six integers from 0 to 30 inclusive
    assert any(item.answer.startswith("-") for item in dataset.items)


def test_the_same_seed_gives_the_same_questions() -> None:
    assert arithmetic(20, seed=1) == arithmetic(20, seed=1)
    assert arithmetic(20, seed=1).items != arithmetic(20, seed=2).items
    assert arithmetic(5, seed=1).items == arithmetic(20, seed=1).items[:5]


@pytest.mark.parametrize("n", [0, -3, 10_001])
def test_arithmetic_refuses_a_size_out_of_bounds(n: int) -> None:
    with pytest.raises(DatasetError, match=r"builtin:arithmetic: n must be between 1 and 10,000"):
        arithmetic(n, seed=0)


def test_builtins_are_made_from_n_and_seed() -> None:
    assert set(BUILTINS) == {"arithmetic", "decisions"}
    assert BUILTINS["arithmetic"](3, 9) == arithmetic(3, seed=9)
