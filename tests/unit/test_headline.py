"""The verdict's headline follows the judges (engine/headline.py): vote patterns by alphas, and
one judge's call against its own means. What a person reads never contradicts the numbers."""

from __future__ import annotations

import pytest

from engine.headline import judge_headline, panel_headline, vote_split
from engine.vocabulary import Side

P, C, T = Side.PRO, Side.CON, Side.TIE
LEANS_AGAINST = {P: 6.3, C: 6.8}
LEVEL = {P: 6.5, C: 6.6}


def votes(*sides: Side | None) -> dict[str, Side | None]:
    return {f"j{i}": side for i, side in enumerate(sides)}


@pytest.mark.parametrize(("cast", "split", "winner", "starts"), [
    # a clear majority names the winner, whatever the means lean to
    ((P, P, P, C), False, P, "For the proposition wins: 3 of 4 judges (3–1 for–against)"),
    ((C, C, C, P), False, C, "Against the proposition wins: 3 of 4 judges (1–3 for–against)"),
    ((P, P, P, T), False, P, "For the proposition wins: 3 of 4 judges (3–0–1 for–against–tie)"),
    # a tie vote is a tie
    ((T, T, T, T), False, T, "Tie: the judges split 0–0–4 for–against–tie"),
    ((P, P, C, C), False, T, "Tie: the judges split 2–2 for–against"),
    ((P, C, T, T), False, T, "Tie: the judges split 1–1–2 for–against–tie"),
    # no majority: contested
    ((P, P, C, T), False, None, "Contested: the judges split 2–1–1 for–against–tie"),
    ((C, P, T, C), False, None, "Contested: the judges split 1–2–1 for–against–tie"),
    # a contentious or irreconcilable panel is contested even with a majority
    ((P, P, P, C), True, None, "Contested: the judges split 3–1 for–against"),
    ((T, T, T, T), True, None, "Contested: the judges split 0–0–4 for–against–tie"),
    # judges that gave no winner are not counted
    ((P, P, None, None), False, P, "For the proposition wins: 2 of 2 judges (2–0 for–against)"),
])
@pytest.mark.parametrize("alpha", [-0.2, 0.05, 0.49, 0.81, None])
def test_the_headline_follows_the_votes(cast: tuple[Side | None, ...], split: bool,
                                        winner: Side | None, starts: str,
                                        alpha: float | None) -> None:
    said = panel_headline(votes(*cast), LEANS_AGAINST, alpha=alpha, split=split)
    assert said.winner is winner
    assert said.text.startswith(starts), said.text
    assert "rubric means 6.3 for vs 6.8 against" in said.text   # the numbers beside it
    if winner is None:
        assert "the rubric means lean against" in said.text
        assert f"alpha {alpha:.2f}" in said.text if alpha is not None else "alpha" not in said.text


def test_weights_decide_a_majority() -> None:
    cast = votes(P, C, C)
    assert panel_headline(cast, LEVEL).winner is C
    heavy = {"j0": 2.5, "j1": 1.0, "j2": 1.0}
    assert panel_headline(cast, LEVEL, weights=heavy).winner is P
    assert panel_headline(cast, LEVEL, weights={"j0": 2.0}).winner is T   # 2 against 2


def test_no_scores_is_no_verdict() -> None:
    assert panel_headline(votes(None, None), LEVEL).winner is None
    assert panel_headline(votes(P, P), None).text.startswith("No verdict")


@pytest.mark.parametrize(("call", "means", "text"), [
    (P, {P: 7.0, C: 5.0}, "For the proposition wins (the judge's call): rubric means 7.0 for "
                          "vs 5.0 against."),
    (C, {P: 5.8, C: 8.8}, "Against the proposition wins (the judge's call): rubric means 5.8 "
                          "for vs 8.8 against."),
    (P, {P: 7.0, C: 7.0}, "For the proposition wins by the judge's call, though its rubric "
                          "means are level: rubric means 7.0 for vs 7.0 against."),
    (T, {P: 5.8, C: 8.8}, "Too close to call (the judge's call, though its rubric means lean "
                          "against): rubric means 5.8 for vs 8.8 against."),
    (T, {P: 6.0, C: 6.1}, "Too close to call (the judge's call): rubric means 6.0 for vs 6.1 "
                          "against."),
])
def test_one_judges_call_and_its_numbers_agree_or_it_says_why_not(
        call: Side, means: dict[Side, float], text: str) -> None:
    said = judge_headline(call, means)
    assert said.winner is call and said.text == text


def test_the_split_counts_every_vote() -> None:
    assert vote_split({"a": P, "b": C, "c": T, "d": P}) == "2–1–1 for–against–tie"
    assert vote_split({"a": C}) == "0–1 for–against"
