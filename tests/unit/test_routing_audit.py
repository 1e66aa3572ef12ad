"""Tests for engine.oversight.routing_audit: the spot-check sampler's rate, determinism and nesting,
and routing measured against the reviewers' decisions, per preset."""

from __future__ import annotations

import random
import uuid

import pytest

from engine.oversight.inference import wilson_interval
from engine.oversight.panel_records import ReviewLabel
from engine.oversight.routing_audit import (
    PUBLISHED,
    ROUTED,
    RoutedOutcome,
    needs_spot_check,
    routing_against_humans,
    spot_check,
)
from engine.vocabulary import Routing


def _ids(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


@pytest.mark.parametrize(("fraction", "seed"), [(0.05, 1), (0.05, 2), (0.10, 3), (0.25, 4),
                                                (0.50, 5)])
def test_spot_check_rate_holds_within_its_binomial_interval(fraction: float, seed: int) -> None:
    ids = _ids(400, seed)
    sampled = sum(spot_check(i, fraction) for i in ids)
    # The rate must hold: the fraction lies inside the 99 % interval of what was sampled.
    low, high = wilson_interval(sampled, len(ids), 0.99)
    assert low <= fraction <= high


def test_spot_check_is_deterministic_and_nested() -> None:
    ids = _ids(300, 6)
    at_5 = {i for i in ids if spot_check(i, 0.05)}
    at_10 = {i for i in ids if spot_check(i, 0.10)}
    assert at_5 == {i for i in ids if spot_check(i, 0.05)}  # every replica agrees
    assert at_5 <= at_10 and len(at_10) > len(at_5)  # raising the fraction only adds


def test_the_salt_changes_the_sample() -> None:
    ids = _ids(400, 7)
    assert {i for i in ids if spot_check(i, 0.5)} != {
        i for i in ids if spot_check(i, 0.5, salt="other")}


@pytest.mark.parametrize(("fraction", "expected"), [(0.0, 0), (1.0, 50)])
def test_spot_check_extremes(fraction: float, expected: int) -> None:
    assert sum(spot_check(i, fraction) for i in _ids(50, 8)) == expected


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_spot_check_refuses_a_bad_fraction(fraction: float) -> None:
    with pytest.raises(ValueError):
        spot_check("x", fraction)


@pytest.mark.parametrize(("routing", "sampled"), [
    ("auto_approve", True), ("tentative", True), ("human_review", False), ("escalate", False)])
def test_only_published_results_are_spot_checked(routing: Routing, sampled: bool) -> None:
    assert needs_spot_check("any-id", routing, 1.0) is sampled
    assert PUBLISHED | ROUTED == {"auto_approve", "tentative", "human_review", "escalate"}


def _outcome(i: int, routing: Routing, label: ReviewLabel | None, *, spot: bool = False,
             preset: str = "decision") -> RoutedOutcome:
    return RoutedOutcome(debate_id=f"d{i}", preset=preset, alpha=0.5, irreconcilable=False,
                         routing=routing, label=label, spot_check=spot,
                         inclusion_probability=0.05 if spot else 1.0)


def test_routing_against_humans_counts_and_rates() -> None:
    outcomes = (
        [_outcome(i, "auto_approve", "approved", spot=True) for i in range(18)]
        + [_outcome(i, "auto_approve", "escalated", spot=True) for i in range(18, 20)]
        + [_outcome(i, "auto_approve", None) for i in range(20, 120)]
        + [_outcome(i, "tentative", "rerun", spot=True) for i in range(120, 125)]
        + [_outcome(i, "human_review", "approved") for i in range(125, 140)]
        + [_outcome(i, "human_review", "escalated") for i in range(140, 150)]
        + [_outcome(i, "escalate", None) for i in range(150, 153)]
        + [_outcome(i, "human_review", "approved", preset="appeal") for i in range(153, 155)]
    )
    report = routing_against_humans(outcomes, min_n=20)
    assert list(report) == ["appeal", "decision"]
    decision = report["decision"]
    assert decision.results == {"auto_approve": 120, "tentative": 5, "human_review": 25,
                                "escalate": 3}
    assert decision.pending == 3
    auto = decision.overturned["auto_approve"]
    assert (auto.status, auto.n) == ("ok", 20) and auto.estimate == pytest.approx(0.1)
    assert auto.interval == pytest.approx(wilson_interval(2, 20))
    published = decision.overturned["published"]
    assert (published.n, published.detail["count"]) == (25, 7)
    assert decision.overturned["tentative"].status == "not_enough_data"
    routed = decision.approved_unchanged["routed"]
    assert routed.n == 25 and routed.estimate == pytest.approx(0.6)
    assert decision.approved_unchanged["escalate"].n == 0
    assert report["appeal"].approved_unchanged["human_review"].status == "not_enough_data"


def test_spot_checks_are_not_counted_as_routed_reviews() -> None:
    outcomes = [_outcome(i, "auto_approve", "approved", spot=True) for i in range(30)]
    report = routing_against_humans(outcomes, min_n=1)["decision"]
    assert report.approved_unchanged["routed"].n == 0
    assert report.overturned["published"].n == 30


def test_inclusion_probability_must_be_a_probability() -> None:
    with pytest.raises(ValueError):
        RoutedOutcome(debate_id="d", preset="p", alpha=0.9, irreconcilable=False,
                      routing="auto_approve", inclusion_probability=0.0)
