"""Properties of the evaluation's statistics and normalisation over generated inputs."""

from __future__ import annotations

import random
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.evaluation.answers import majority, normalise
from engine.evaluation.dataset import Item
from engine.evaluation.stats import mcnemar_exact, paired, wilson

PROPERTY = settings(max_examples=300, deadline=None, database=None)
NUMBER = Item(id="n", question="q", answer="0")


@PROPERTY
@given(st.integers(0, 2_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_holds_the_observed_rate(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson(k, n)
    rate = k / n if n else 0.5
    assert 0.0 <= low <= rate <= high <= 1.0


@PROPERTY
@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=300))
def test_paired_holds_the_difference_and_its_test(pairs: list[tuple[bool, bool]]) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    result = paired(a, b)
    assert -1.0 <= result.low <= result.diff <= result.high <= 1.0
    assert result.b + result.c == sum(1 for x, y in pairs if x != y)
    assert result.p_value == mcnemar_exact(result.b, result.c)
    assert 0.0 < result.p_value <= 1.0


@PROPERTY
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_is_symmetric_and_falls_as_the_split_widens(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)
    if b < c:
        assert mcnemar_exact(b, c + 1) <= mcnemar_exact(b, c)


@PROPERTY
@given(st.decimals(min_value=-10**9, max_value=10**9, places=3, allow_nan=False),
       st.sampled_from(["{}", "The answer is {}.", "so it is **{}**", "answer: {}", "= {}"]),
       st.booleans())
def test_a_number_in_prose_reads_back_as_itself(value: Decimal, template: str,
                                                commas: bool) -> None:
    written = f"{value:,f}" if commas else f"{value:f}"
    answer = normalise(template.format(written), NUMBER)
    assert answer is not None and Decimal(answer) == value
    assert normalise(answer, NUMBER) == answer


@PROPERTY
@given(st.lists(st.one_of(st.none(), st.sampled_from(["1", "2", "3"])), max_size=12),
       st.integers(0, 2**32))
def test_majority_picks_a_most_frequent_answer(answers: list[str | None], seed: int) -> None:
    winner, tie = majority(answers, random.Random(seed))
    given_answers = [a for a in answers if a is not None]
    if not given_answers:
        assert (winner, tie) == (None, False)
        return
    counts = {a: given_answers.count(a) for a in given_answers}
    assert winner is not None and counts[winner] == max(counts.values())
    assert tie == (sum(1 for n in counts.values() if n == max(counts.values())) > 1)
    assert majority(answers, random.Random(seed)) == (winner, tie)
