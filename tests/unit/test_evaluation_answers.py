"""engine/evaluation/answers.py: replies to canonical answers, correctness, majority with ties."""

from __future__ import annotations

import random

import pytest

from engine.evaluation.answers import Kind, describe, is_correct, kind, majority, normalise
from engine.evaluation.dataset import Dataset, Item

NUMBER = Item(id="n", question="What is 6*7?", answer="42")
NEGATIVE = Item(id="neg", question="What is 3-10?", answer="-7")
MONEY = Item(id="m", question="How much?", answer="1234")
CHOICE = Item(id="c", question="Which is a city?", answer="B",
              choices=("a river", "Paris", "a mountain", "an ocean"))
YES = Item(id="y", question="Is 2^31-1 prime?", answer="yes")
NO = Item(id="no", question="Is 91 prime?", answer="no")
TEXT = Item(id="t", question="Capital of France?", answer="Paris")


@pytest.mark.parametrize(("reply", "want"), [
    ("42", "42"),
    ("42.0", "42"),
    ("42.000", "42"),
    ("The answer is 42.", "42"),
    ("So 6*7 = 42", "42"),
    ("Answer: **42**", "42"),
    ("First 6+1=7, then the final answer is 42, not 41", "42"),
    ("I get 41... no wait, 42", "42"),
    ("The answer to 6*7 is 42", "42"),  # "answer to" introduces the question, not the answer
    ("Final answer 42, though 41 was tempting", "42"),
    ("3+4*5+6-7*8 = -21", "-21"),
    ("-7", "-7"),
    ("−7", "-7"),                        # a Unicode minus sign
    ("it comes to 10-17", "17"),         # a hyphen between numbers is no sign
    ("it is 10 - 3", "3"),               # nor is a minus apart from its number
    ("-$5", "-5"),
    ("$ 12", "12"),
    ("$1,234", "1234"),
    ("$1,234.50", "1234.5"),
    ("1,234,567", "1234567"),
    ("45%", "45"),
    ("2.50", "2.5"),
    ("1e3", "1000"),
    ("I cannot compute that", None),
    ("", None),
    ("   ", None),
])
def test_numbers_in_prose(reply: str, want: str | None) -> None:
    assert normalise(reply, NUMBER) == want


@pytest.mark.parametrize(("reply", "want"), [
    ("B", "B"),
    ("b", "B"),
    ("(b)", "B"),
    ("B.", "B"),
    ("b) Paris", "B"),
    ("(B) Paris", "B"),
    ("B: Paris", "B"),
    ("The answer is (b).", "B"),
    ("Option B", "B"),
    ("Paris", "B"),
    ("paris.", "B"),
    ("It must be Paris, of course", "B"),
    ("E", None),                          # a letter past the choices
    ("A cat", None),                      # an article is no letter
    ("Paris or a river", None),           # two choices named: no answer
    ("no idea", None),
])
def test_choices_by_letter_or_text(reply: str, want: str | None) -> None:
    assert normalise(reply, CHOICE) == want


@pytest.mark.parametrize(("reply", "want"), [
    ("yes", "yes"),
    ("Yes.", "yes"),
    ("YES, because 2^31-1 is a Mersenne prime", "yes"),
    ("true", "yes"),
    ("Correct", "yes"),
    ("affirmative", "yes"),
    ("No", "no"),
    ("no, it is 7*13", "no"),
    ("False", "no"),
    ("incorrect", "no"),
    ("The answer is no.", "no"),
    ("After checking, my answer is: yes", "yes"),
    ("I would say true", "yes"),
    ("It is not true", None),             # a negated side is no answer
    ("Well, it depends: yes or no", None),  # both sides, neither first: no answer
    ("maybe", None),
    ("y", "yes"),
    ("N", "no"),
    ("N/A", None),                          # a lone letter counts only as the whole reply
])
def test_yes_no_synonyms(reply: str, want: str | None) -> None:
    assert normalise(reply, YES) == want


@pytest.mark.parametrize(("reply", "want"), [
    ("Paris", "paris"),
    ("  PARIS. ", "paris"),
    ("**Paris**", "paris"),
    ("\"Paris\"", "paris"),
    ("The answer is Paris.", "paris"),
])
def test_text_answers_fold_case_space_and_punctuation(reply: str, want: str) -> None:
    assert normalise(reply, TEXT) == want


@pytest.mark.parametrize(("item", "want"), [
    (NUMBER, Kind.NUMBER), (NEGATIVE, Kind.NUMBER), (CHOICE, Kind.CHOICE), (YES, Kind.YES_NO),
    (NO, Kind.YES_NO), (TEXT, Kind.TEXT),
    (Item(id="x", question="q", answer="Paris 2024"), Kind.TEXT),
    (Item(id="x", question="q", answer="$1,234"), Kind.NUMBER),
])
def test_kind_follows_the_expected_answer(item: Item, want: Kind) -> None:
    assert kind(item) is want


@pytest.mark.parametrize(("reply", "item"), [
    ("The answer is 42.", NUMBER), ("$1,234", MONEY), ("b) Paris", CHOICE), ("True.", YES),
    ("**Paris**", TEXT), ("-7", NEGATIVE),
])
def test_normalising_is_idempotent(reply: str, item: Item) -> None:
    once = normalise(reply, item)
    assert once is not None and normalise(once, item) == once


@pytest.mark.parametrize(("reply", "item", "want"), [
    ("The answer is 42", NUMBER, True),
    ("42.0", NUMBER, True),
    ("43", NUMBER, False),
    ("−7", NEGATIVE, True),
    ("7", NEGATIVE, False),
    ("$1,234", MONEY, True),
    ("(b)", CHOICE, True),
    ("Paris", CHOICE, True),
    ("a river", CHOICE, False),
    ("True", YES, True),
    ("true", NO, False),
    ("nope", NO, True),
    ("paris", TEXT, True),
    ("London", TEXT, False),
    ("no idea at all", NUMBER, False),
    (None, NUMBER, False),
])
def test_is_correct(reply: str | None, item: Item, want: bool) -> None:
    assert is_correct(reply, item) is want


def test_tolerance_allows_numbers_that_close() -> None:
    pi = Item(id="pi", question="pi to two places?", answer="3.14", tolerance=0.01)
    assert is_correct("3.1416", pi) and is_correct("3.15", pi) and is_correct("3.13", pi)
    assert not is_correct("3.16", pi) and not is_correct("3", pi)
    exact = Item(id="e", question="q", answer="0.3")
    assert is_correct("0.30", exact) and not is_correct("0.30000000000000004", exact)


def test_an_answer_no_reply_could_match_is_never_correct() -> None:
    huge = Item(id="h", question="q", answer="1e40")       # beyond the numbers replies give
    assert kind(huge) is Kind.NUMBER and not is_correct("1e40", huge)


def test_choice_answers_given_as_text_in_the_dataset() -> None:
    item = Item(id="c2", question="q", answer="Paris", choices=("Rome", "Paris"))
    assert is_correct("B", item) and is_correct("paris", item) and not is_correct("A", item)


def test_majority_without_a_tie() -> None:
    assert majority(["42", "41", "42", None, "42"], random.Random(0)) == ("42", False)


def test_nones_never_win_unless_every_answer_is_none() -> None:
    assert majority([None, None, None, "7"], random.Random(0)) == ("7", False)
    assert majority([None, None], random.Random(0)) == (None, False)
    assert majority([], random.Random(0)) == (None, False)


def test_ties_are_broken_at_random_reproducibly_and_counted() -> None:
    answers = ["yes", "no", "no", "yes", None]
    picks = {majority(answers, random.Random(seed)) for seed in range(40)}
    assert picks == {("yes", True), ("no", True)}             # both can win a tie
    for seed in range(10):                                      # the same seed, the same pick,
        first = majority(answers, random.Random(seed))          # whatever the order of answers
        assert majority(list(reversed(answers)), random.Random(seed)) == first


def test_describe_names_the_rules_for_the_kinds_present() -> None:
    numbers = describe(Dataset(name="n", items=(NUMBER,), source="s"))
    assert "numbers are read" in numbers and "choices" not in numbers
    assert "tolerance" not in numbers
    mixed = describe(Dataset(name="m", items=(NUMBER, CHOICE, YES, TEXT), source="s"))
    for words in ("numbers are read", "yes/no", "choices are matched", "compared as text",
                  "counts as wrong"):
        assert words in mixed
    tolerant = Item(id="t", question="q", answer="1.5", tolerance=0.1)
    assert "tolerance" in describe(Dataset(name="t", items=(tolerant,), source="s"))
    assert "\n" not in mixed
