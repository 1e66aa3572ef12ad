"""Tests for engine.oversight.judge_weights: configured weights without evidence, shrinkage while
evidence is thin, the factor bound and the share cap, and weights from a synthetic reviewed
history."""

from __future__ import annotations

import math

import pytest

from engine.oversight.judge_weights import WeightPolicy, evidence_weights
from engine.oversight.panel_records import AgreementCount, agreement_counts
from tests.support.audit_fixtures import SyntheticJudge, history

EQUAL = {"technical": 1.0, "business": 1.0, "risk": 1.0, "general": 1.0}


def _counts(**rates: tuple[int, int]) -> dict[str, AgreementCount]:
    return {j: AgreementCount(agreed=a, labels=n) for j, (a, n) in rates.items()}


@pytest.mark.parametrize(("agreement", "reason"), [
    ({}, "0 reviewer labels of the 30 needed"),
    (_counts(technical=(10, 12), business=(9, 12), risk=(5, 12), general=(11, 12)),
     "12 reviewer labels of the 30 needed"),
    (_counts(technical=(40, 100), business=(45, 100), risk=(30, 100), general=(50, 100)),
     "the reviewers do not back the panel's typical judge"),
])
def test_configured_weights_without_usable_evidence(agreement: dict[str, AgreementCount],
                                                    reason: str) -> None:
    weights = evidence_weights(EQUAL, agreement)
    assert {j: w.weight for j, w in weights.items()} == EQUAL
    assert all(w.factor == 1.0 and reason in w.reason for w in weights.values())


def test_a_judge_as_good_as_the_panel_keeps_its_weight() -> None:
    weights = evidence_weights({"a": 2.0, "b": 1.0, "c": 1.0},
                               _counts(a=(80, 100), b=(80, 100), c=(80, 100)))
    assert {j: w.weight for j, w in weights.items()} == pytest.approx({"a": 2.0, "b": 1.0,
                                                                        "c": 1.0})


def test_the_factor_is_the_log_odds_ratio_of_the_shrunk_rate() -> None:
    agreement = _counts(technical=(90, 100), business=(80, 100), risk=(70, 100),
                        general=(80, 100))
    weights = evidence_weights(EQUAL, agreement, WeightPolicy(max_share=1.0))
    pooled = 320 / 400
    shrunk = (90 + 20 * pooled) / 120
    expected = math.log(shrunk / (1 - shrunk)) / math.log(pooled / (1 - pooled))
    assert weights["technical"].factor == pytest.approx(expected)
    assert weights["technical"].weight > weights["general"].weight > weights["risk"].weight
    assert weights["technical"].agreement == 0.9 and weights["technical"].labels == 100
    assert "agreed with reviewers 90/100 vs panel 80%" in weights["technical"].reason


def test_thin_evidence_moves_a_weight_less() -> None:
    thin = evidence_weights(EQUAL, _counts(technical=(30, 30), business=(24, 30),
                                           risk=(24, 30), general=(24, 30)))
    thick = evidence_weights(EQUAL, _counts(technical=(300, 300), business=(240, 300),
                                            risk=(240, 300), general=(240, 300)))
    assert 1.0 < thin["technical"].factor < thick["technical"].factor


@pytest.mark.parametrize(("agreed", "factor"), [(100, 2.0), (1, 0.5)])
def test_the_factor_is_bounded(agreed: int, factor: float) -> None:
    agreement = _counts(technical=(agreed, 100), business=(80, 100), risk=(80, 100),
                        general=(80, 100))
    weights = evidence_weights(EQUAL, agreement)
    assert weights["technical"].factor == factor
    assert "bounded from" in weights["technical"].reason


@pytest.mark.parametrize(("configured", "max_share"), [
    ({"a": 10.0, "b": 1.0, "c": 1.0}, 0.5),
    ({"a": 10.0, "b": 5.0, "c": 1.0, "d": 1.0}, 0.4),
    ({"a": 3.0, "b": 1.0}, 0.3),  # a cap below 1/n is raised to 1/n
])
def test_no_judge_ever_dominates(configured: dict[str, float], max_share: float) -> None:
    weights = evidence_weights(configured, {}, WeightPolicy(max_share=max_share))
    cap = max(max_share, 1 / len(configured))
    assert all(w.share <= cap + 1e-9 for w in weights.values())
    assert sum(w.share for w in weights.values()) == pytest.approx(1.0)
    assert sum(w.weight for w in weights.values()) == pytest.approx(sum(configured.values()))
    capped = [w for w in weights.values() if "capped at" in w.reason]
    assert capped and all(w.share == pytest.approx(cap) for w in capped)


def test_the_cap_keeps_the_others_in_proportion() -> None:
    weights = evidence_weights({"a": 10.0, "b": 2.0, "c": 1.0}, {})
    assert weights["a"].share == pytest.approx(0.5)
    assert weights["b"].weight / weights["c"].weight == pytest.approx(2.0)


def test_weights_from_a_reviewed_synthetic_history() -> None:
    judges = [SyntheticJudge(name="technical"), SyntheticJudge(name="business"),
              SyntheticJudge(name="risk", habit="first"), SyntheticJudge(name="general")]
    counts = agreement_counts(history(judges, seed=61, reviewed=1.0))
    weights = evidence_weights(EQUAL, {judge: c for (judge, _), c in counts.items()})
    assert weights["risk"].weight < 0.8  # picks Position A whatever the merits
    assert all(weights[j].weight > 1.0 for j in ("technical", "business", "general"))
    assert max(w.share for w in weights.values()) <= 0.5


def test_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        evidence_weights({"a": 0.0}, {})
    with pytest.raises(ValueError):
        WeightPolicy(max_factor=0.5)
    assert evidence_weights({}, {}) == {}
