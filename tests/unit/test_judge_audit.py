"""Tests for engine.oversight.judge_audit and engine.oversight.panel_records: synthetic histories
with known judge biases (the report finds exactly those and flags nothing else), the agreement
definition, and "not enough data" below every minimum."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import get_args

import pytest

from engine.oversight.inference import Figure
from engine.oversight.judge_audit import (
    AuditPolicy,
    audit_judges,
    drift,
    leniency,
    position_bias,
    reviewer_agreement,
    verbosity_bias,
)
from engine.oversight.panel_records import (
    REVIEW_LABELS,
    AgreementCount,
    JudgeVerdict,
    PanelRecord,
    ReviewLabel,
    Side,
    Winner,
    agreement_counts,
    agrees_with_reviewer,
    side_means,
)
from storage.records import ReviewStatus
from tests.support.audit_fixtures import START, Habit, SyntheticJudge, history

MIXED = [SyntheticJudge(name="fair-a"), SyntheticJudge(name="first", habit="first"),
         SyntheticJudge(name="verbose", habit="verbose"),
         SyntheticJudge(name="harsh", habit="harsh"), SyntheticJudge(name="fair-b")]
EXPECTED_FLAGS = {"fair-a": (), "fair-b": (), "first": ("position_bias",),
                  "verbose": ("verbosity_bias",), "harsh": ("leniency",)}


def _flags(panels: list[PanelRecord]) -> dict[str, tuple[str, ...]]:
    return {audit.judge: audit.flags for audit in audit_judges(panels)}


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_report_finds_exactly_the_planted_biases(seed: int) -> None:
    assert _flags(history(MIXED, seed=seed)) == EXPECTED_FLAGS


@pytest.mark.parametrize(("habit", "flag"), [
    ("first", "position_bias"), ("verbose", "verbosity_bias"), ("harsh", "leniency"),
])
def test_one_biased_judge_in_the_default_panel_of_four(habit: Habit, flag: str) -> None:
    judges = [SyntheticJudge(name="technical"), SyntheticJudge(name="business"),
              SyntheticJudge(name="risk", habit=habit), SyntheticJudge(name="general")]
    flags = _flags(history(judges, seed=21))
    assert flags == {"technical": (), "business": (), "risk": (flag,), "general": ()}


@pytest.mark.parametrize("seed", [31, 32, 33, 34])
def test_a_fair_panel_flags_nothing(seed: int) -> None:
    judges = [SyntheticJudge(name=n) for n in ("technical", "business", "risk", "general")]
    assert set(_flags(history(judges, seed=seed)).values()) == {()}


def test_biased_neighbours_do_not_bias_the_fair_judges_estimates() -> None:
    """Not only unflagged: a fair judge's figures stay near zero next to three biased judges."""
    audits = {a.judge: a for a in audit_judges(history(MIXED, seed=14, debates=400))}
    for name in ("fair-a", "fair-b"):
        audit = audits[name]
        assert audit.position_bias.estimate == pytest.approx(audit.position_bias.expected,
                                                             abs=0.08)
        assert abs(audit.verbosity_bias.estimate or 1.0) < 0.15
        assert abs(audit.leniency.estimate or 1.0) < 0.1


def test_the_figures_of_a_biased_judge() -> None:
    audits = {a.judge: a for a in audit_judges(history(MIXED, seed=15))}
    first = audits["first"].position_bias
    assert first.estimate == 1.0 and first.n == 240
    assert first.expected == pytest.approx(0.5, abs=0.06)
    assert first.interval is not None and first.interval[0] > 0.98
    harsh = audits["harsh"].leniency
    assert harsh.interval is not None and harsh.interval[0] < -1.5 < harsh.interval[1]
    verbose = audits["verbose"].verbosity_bias
    assert verbose.estimate is not None and verbose.estimate > 0.6
    assert verbose.detail["points_per_doubling"] == pytest.approx(1.6, abs=0.25)
    for audit in audits.values():
        for figure in audit.figures:
            assert figure.status == "ok" and figure.interval is not None and figure.n >= 30


def test_drift_finds_a_judge_that_turned_harsh_late() -> None:
    judges = [SyntheticJudge(name="a"), SyntheticJudge(name="b"), SyntheticJudge(name="c"),
              SyntheticJudge(name="late", habit="late-harsh")]
    audits = {a.judge: a for a in audit_judges(history(judges, seed=41, debates=150))}
    assert {name: a.flags for name, a in audits.items()} == {
        "a": (), "b": (), "c": (), "late": ("drift",)}
    late = audits["late"].drift
    assert late.estimate == pytest.approx(-1.5, abs=0.2)
    assert late.detail["recent_n"] == 30 and late.detail["baseline_n"] == 120
    assert late.detail["z"] < -2


def test_drift_compares_in_time_order_whatever_the_input_order() -> None:
    judges = [SyntheticJudge(name="a"), SyntheticJudge(name="b"),
              SyntheticJudge(name="late", habit="late-harsh")]
    panels = history(judges, seed=42, debates=100)
    key = ("late", "gpt-4o-mini")
    assert drift(list(reversed(panels)), key) == drift(panels, key)


def test_a_judge_is_audited_per_model() -> None:
    panels = history([SyntheticJudge(name="a"), SyntheticJudge(name="b"),
                      SyntheticJudge(name="c")], seed=43, debates=80)
    switched = [replace(p, verdicts=tuple(
        replace(v, model="gpt-4o") if v.judge == "c" and i >= 40 else v for v in p.verdicts))
        for i, p in enumerate(panels)]
    audits = audit_judges(switched)
    assert [(a.judge, a.model, a.debates) for a in audits] == [
        ("a", "gpt-4o-mini", 80), ("b", "gpt-4o-mini", 80),
        ("c", "gpt-4o", 40), ("c", "gpt-4o-mini", 40)]


def _small_history(debates: int) -> list[PanelRecord]:
    judges = [SyntheticJudge(name=n) for n in ("a", "b", "c")]
    return history(judges, seed=51, debates=debates, reviewed=1.0)


@pytest.mark.parametrize(("figure", "debates", "minimum"), [
    (lambda p: position_bias(p, ("a", "gpt-4o-mini")), 20, 30),
    (lambda p: verbosity_bias(p, ("a", "gpt-4o-mini")), 20, 30),
    (lambda p: leniency(p, ("a", "gpt-4o-mini")), 29, 30),
    (lambda p: drift(p, ("a", "gpt-4o-mini")), 59, 60),
    (lambda p: reviewer_agreement(p, ("a", "gpt-4o-mini")), 15, 20),
])
def test_not_enough_data_below_the_stated_minimum(figure: object, debates: int,
                                                  minimum: int) -> None:
    assert callable(figure)
    result: Figure = figure(_small_history(debates))
    assert result.status == "not_enough_data" and result.min_n == minimum
    assert result.estimate is None and result.interval is None and result.p_value is None
    assert f"of the {minimum} needed" in result.note and not result.flagged


def test_a_judge_never_seen_has_no_data() -> None:
    panels = _small_history(40)
    assert position_bias(panels, ("ghost", "m")).status == "not_enough_data"
    assert leniency(panels, ("ghost", "m")).n == 0


def test_a_small_window_flags_nothing_and_reports_no_test() -> None:
    audits = audit_judges(_small_history(10), AuditPolicy())
    assert all(f.status == "not_enough_data" and f.adjusted_p is None
               for a in audits for f in a.figures)


def test_the_minimum_effect_keeps_a_tiny_bias_unflagged() -> None:
    panels = history(MIXED, seed=16)
    strict = {a.judge: a.flags for a in audit_judges(panels, AuditPolicy(
        min_leniency_effect=5.0, min_position_effect=0.6, min_verbosity_effect=5.0))}
    assert set(strict.values()) == {()}


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize(("judge", "panel", "review", "human", "expected"), [
    ("pro", "pro", "approved", None, True),
    ("con", "pro", "approved", None, False),
    ("tie", "pro", "approved", None, False),
    ("tie", "tie", "approved", None, True),
    ("pro", "pro", "escalated", None, False),
    ("con", "pro", "escalated", None, True),
    ("tie", "pro", "rerun", None, True),
    ("pro", "pro", "rerun", None, False),
    ("con", "pro", "escalated", "con", True),   # a named side decides, whatever the label
    ("pro", "pro", "approved", "con", False),
    ("con", "pro", None, "con", True),          # an appeal outcome without a review
    ("pro", "pro", None, None, None),           # no label
    (None, "pro", "approved", None, None),      # no verdict
    ("pro", None, "approved", None, None),      # no panel winner to compare with
])
def test_agreement_definition(judge: Winner | None, panel: Winner | None,
                              review: ReviewLabel | None, human: Side | None,
                              expected: bool | None) -> None:
    assert agrees_with_reviewer(judge, panel, review, human) is expected


def test_review_labels_are_the_decided_review_statuses() -> None:
    assert set(REVIEW_LABELS) == {s.value for s in ReviewStatus} - {"pending"}
    assert REVIEW_LABELS == get_args(ReviewLabel)


def _verdict(judge: str, winner: Winner | None) -> JudgeVerdict:
    return JudgeVerdict(judge=judge, model="m", shown_first="pro", winner=winner,
                        scores={"pro": 6.0, "con": 5.0})


def test_agreement_counts() -> None:
    def panel(i: int, review: ReviewLabel | None, winners: dict[str, Winner | None]
              ) -> PanelRecord:
        return PanelRecord(debate_id=f"d{i}", finished_at=START + timedelta(hours=i),
                           lengths={"pro": 100, "con": 100}, panel_winner="pro", review=review,
                           verdicts=tuple(_verdict(j, w) for j, w in winners.items()))

    panels = [panel(0, "approved", {"x": "pro", "y": "con"}),
              panel(1, "escalated", {"x": "pro", "y": "con"}),
              panel(2, None, {"x": "pro", "y": "pro"}),
              panel(3, "rerun", {"x": None, "y": "tie"})]
    assert agreement_counts(panels) == {("x", "m"): AgreementCount(agreed=1, labels=2),
                                        ("y", "m"): AgreementCount(agreed=2, labels=3)}


def test_reviewer_agreement_of_the_synthetic_panel() -> None:
    audits = {a.judge: a for a in audit_judges(history(MIXED, seed=17, reviewed=1.0))}
    fair, first = audits["fair-a"].reviewer_agreement, audits["first"].reviewer_agreement
    assert fair.n == 240 and fair.interval is not None and first.interval is not None
    assert first.interval[1] < fair.interval[0]  # picking A regardless agrees less
    assert not fair.flagged and fair.adjusted_p is None  # reported, never flagged


@pytest.mark.parametrize(("items", "row", "expected"), [
    (["pro.logic", "pro.evidence", "con.logic", "con.evidence", "claim.P1"],
     [8, 6, 4, None, 9], {"pro": 7.0, "con": 4.0}),
    (["pro.logic", "con.logic"], [None, 5], {"con": 5.0}),
    ([], [], {}),
])
def test_side_means(items: list[str], row: list[float | None],
                    expected: dict[Side, float]) -> None:
    assert side_means(items, row) == expected
