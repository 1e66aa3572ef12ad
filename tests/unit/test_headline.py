"""The verdict's headline follows the judges (engine/reading/headline.py) and reads aloud: a table
of vote patterns x rubric means x alpha, each headline checked against the rules and printed (run
with -s to read the table); the why of a vote the means do not bear out; one judge's call against
its own means."""

from __future__ import annotations

import pytest

from engine.reading.headline import (
    PanelScores,
    judge_headline,
    panel_headline,
    vote_split,
    weighted_means,
)
from engine.settings import ThresholdSpec
from engine.vocabulary import Side

P, C, T = Side.PRO, Side.CON, Side.TIE
THRESHOLDS = ThresholdSpec()   # high 0.80, tentative 0.67, escalate 0.50

#: vote pattern -> (the votes, the side a weighted majority names; TIE: a tie; None: contested)
VOTES: dict[str, tuple[tuple[Side, ...], Side | None]] = {
    "3-0 for": ((P, P, P), P),
    "2-1 for": ((P, P, C), P),
    "1-2 against": ((P, C, C), C),
    "3-1 for (a tie vote)": ((P, P, P, T), P),
    "2-2": ((P, P, C, C), T),
    "3 tie": ((T, T, T), T),
    "2-1-1 no majority": ((P, P, C, T), None),
}
MEANS = {"lean for": {P: 6.8, C: 5.9}, "lean against": {P: 5.8, C: 6.5},
         "level": {P: 6.5, C: 6.6}}
ALPHAS = {"high 0.91": 0.91, "review 0.55": 0.55, "low -0.10": -0.10}
FIGURES = {"lean for": "6.8 for vs 5.9 against", "lean against": "5.8 for vs 6.5 against",
           "level": "6.5 for vs 6.6 against"}


def votes(*sides: Side | None) -> dict[str, Side | None]:
    return {f"j{i}": side for i, side in enumerate(sides)}


def scores(means: dict[Side, float], cast: dict[str, Side | None], alpha: float | None,
           **more: object) -> PanelScores:
    """Every judge scored as the panel's means (so those are its weighted means too)."""
    own = {judge: means for judge in cast}
    return PanelScores(means=weighted_means(own), own=own, alpha=alpha,
                       contentious=alpha is not None and alpha < THRESHOLDS.escalate,
                       thresholds=THRESHOLDS, **more)  # type: ignore[arg-type]


@pytest.mark.parametrize("alpha_name", list(ALPHAS))
@pytest.mark.parametrize("means_name", list(MEANS))
@pytest.mark.parametrize("pattern", list(VOTES))
def test_the_headline_table(pattern: str, means_name: str, alpha_name: str) -> None:
    sides, majority = VOTES[pattern]
    cast, alpha, means = votes(*sides), ALPHAS[alpha_name], MEANS[means_name]
    said = panel_headline(cast, scores(means, cast, alpha))
    print(f"\n| {pattern} | {means_name} | {alpha_name} | {said.winner} | {said.text} |")
    low = alpha < THRESHOLDS.escalate
    unanimous = len(set(sides)) == 1
    assert said.winner is (None if low else majority)
    assert FIGURES[means_name] in said.text                 # the numbers beside it
    assert not ("split" in said.text and unanimous)         # "split" only for a divided vote
    assert ("alpha" in said.text) == (low or majority is None)
    if low:   # what is contested is the scoring, and the sentence says which
        assert "(below 0.50)" in said.text
        if unanimous:
            agree = "it is a tie" if sides[0] is T else "on the winner"
            assert said.text.startswith(f"The judges agree {agree} but not on the "
                                        "scores: all 3 ")
        else:
            assert said.text.startswith(f"Contested: the judges split {vote_split(cast)} "
                                        "and their scores disagree")
    leaning = {"lean for": P, "lean against": C, "level": T}[means_name]
    voted = said.winner if said.winner is not None else (sides[0] if unanimous else None)
    if voted is not None and leaning not in (voted, T):   # votes and means part ways: why
        assert "though their rubric means lean" in said.text
        astray = sum(1 for side in sides if side is not leaning)   # all scored as the means
        assert (f"because {astray} of the {len(sides)} judges' votes do not follow their own "
                "rubric scores." in said.text if astray < len(sides) else
                "because no judge's vote follows its own rubric scores." in said.text)
    else:
        assert "though" not in said.text and "because" not in said.text


def test_a_minority_with_wider_margins_is_why_the_means_lean_its_way() -> None:
    own = {"j0": {P: 6.0, C: 5.0}, "j1": {P: 6.0, C: 5.0}, "j2": {P: 2.0, C: 9.0}}
    cast = votes(P, P, C)
    means = weighted_means(own)
    assert means == pytest.approx({P: 14 / 3, C: 19 / 3})
    said = panel_headline(cast, PanelScores(means=means, own=own, alpha=0.9,
                                            thresholds=THRESHOLDS))
    assert said == said.__class__(P, (
        "For the proposition wins: 2 of 3 judges (2–1 for–against), though their rubric means "
        "lean against: 4.7 for vs 6.3 against, because the 1 voting against scored that side "
        "ahead by 7.0 points on average, the 2 voting for theirs by only 1.0."))


def test_the_issue_headlines_read_aloud() -> None:
    """The two headlines issue 33 quotes, as they read now."""
    own = {"a": {P: 5.0, C: 6.5}, "b": {P: 5.6, C: 6.5}, "c": {P: 6.9, C: 6.5}}
    cast: dict[str, Side | None] = {"a": P, "b": P, "c": P}
    means = weighted_means(own)
    won = panel_headline(cast, PanelScores(means=means, own=own, alpha=0.9,
                                           thresholds=THRESHOLDS))
    assert won.text == ("For the proposition wins: 3 of 3 judges (3–0 for–against), though "
                        "their rubric means lean against: 5.8 for vs 6.5 against, because 2 of "
                        "the 3 judges' votes do not follow their own rubric scores.")
    low = panel_headline(cast, PanelScores(means=means, own=own, alpha=-0.1, contentious=True,
                                           thresholds=THRESHOLDS))
    assert low.winner is None and low.text.startswith(
        "The judges agree on the winner but not on the scores: all 3 voted for the "
        "proposition; alpha -0.10 (below 0.50), so a person decides")


def test_a_tie_vote_beside_leaning_means_says_why() -> None:
    own = {"j0": {P: 9.0, C: 2.0}, "j1": {P: 9.0, C: 2.0}, "j2": {P: 5.0, C: 6.0},
           "j3": {P: 5.0, C: 6.0}}
    said = panel_headline(votes(P, P, C, C), PanelScores(means=weighted_means(own), own=own))
    assert said.winner is T and said.text == (
        "Tie: the judges split 2–2 for–against, though their rubric means lean for: 7.0 for "
        "vs 4.0 against, because the 2 voting for scored that side ahead by 7.0 points on "
        "average, the 2 voting against theirs by only 1.0.")


def test_an_irreconcilable_panel_says_why() -> None:
    cast = votes(P, P, C)
    said = panel_headline(cast, scores(MEANS["lean for"], cast, 0.6, irreconcilable=True))
    assert said.winner is None and said.text == (
        "Contested: the judges split 2–1 for–against and score some points far apart "
        "(irreconcilable); alpha 0.60; the rubric means lean for: 6.8 for vs 5.9 against.")


def test_without_the_judges_own_scores_the_why_is_the_rule() -> None:
    said = panel_headline(votes(P, P), PanelScores(means=MEANS["lean against"]))
    assert said.text.endswith("because the vote counts each judge's named winner, the means "
                              "average every score they gave.")


def test_weights_decide_a_majority() -> None:
    cast = votes(P, C, C)
    level = PanelScores(means=MEANS["level"])
    assert panel_headline(cast, level).winner is C
    heavy = {"j0": 2.5, "j1": 1.0, "j2": 1.0}
    assert panel_headline(cast, PanelScores(means=MEANS["level"], weights=heavy)).winner is P
    two = PanelScores(means=MEANS["level"], weights={"j0": 2.0})
    assert panel_headline(cast, two).winner is T   # 2 against 2


def test_no_scores_is_no_verdict() -> None:
    assert panel_headline(votes(None, None), PanelScores(means=MEANS["level"])).winner is None
    assert panel_headline(votes(P, P), PanelScores(means=None)).text.startswith("No verdict")


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
