"""engine/evaluation/report.py: summaries, paired comparisons, the JSON shape, the readings."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.report import (
    Comparison,
    ItemOutcome,
    ModeSummary,
    Report,
    build_report,
    from_json,
    reading,
    to_json,
)
from engine.evaluation.stats import Paired, paired, wilson

DATASET = Dataset(name="sums", source="sums.jsonl",
                  items=tuple(Item(id=str(i), question=f"{i}+{i}?", answer=str(2 * i))
                              for i in range(1, 11)))


def outcome(item_id: str, correct: bool, *, cost: float = 0.001, calls: int = 1,
            tie: bool = False, error: str | None = None) -> ItemOutcome:
    return ItemOutcome(item_id=item_id, answer=None if error else ("x" if correct else "y"),
                       correct=correct, tie=tie, cost_usd=cost, calls=calls, tokens=100 * calls,
                       seconds=2.0 * calls, error=error)


def mode(rights: str, **kwargs: object) -> list[ItemOutcome]:
    """One outcome per item from a string of 1s and 0s ("1101..."), '-' for no outcome."""
    return [outcome(str(i), flag == "1", **kwargs)  # type: ignore[arg-type]
            for i, flag in enumerate(rights, start=1) if flag != "-"]


def test_summaries_are_per_question_means_with_wilson_intervals() -> None:
    single = mode("1100110011", cost=0.002)
    vote = mode("1110111011", cost=0.01, calls=5)
    vote[0] = replace(vote[0], tie=True)
    report = build_report(DATASET, {"single": single, "vote": vote})
    first, second = report.modes
    assert (first.mode, first.n, first.correct, first.accuracy) == ("single", 10, 6, 0.6)
    assert first.interval == wilson(6, 10)
    assert first.cost_usd == pytest.approx(0.002) and first.calls == 1.0
    assert (second.correct, second.calls, second.tokens, second.seconds) == (8, 5.0, 500.0, 10.0)
    assert (second.ties, second.errors) == (1, 0)
    assert report.complete and report.missing == ()
    assert report.dataset == "sums" and report.source == "sums.jsonl"
    assert "numbers are read" in report.normalisation


def test_every_mode_is_compared_with_single_and_the_vote_over_shared_items() -> None:
    report = build_report(DATASET, {"single": mode("1100110011"), "vote": mode("1110111011"),
                                    "panel": mode("1111111110", cost=0.004, calls=7)})
    pairs = [(c.mode, c.against) for c in report.comparisons]
    assert pairs == [("vote", "single"), ("panel", "single"), ("panel", "vote")]
    panel_single = report.comparisons[1]
    single = [f == "1" for f in "1100110011"]
    panel = [f == "1" for f in "1111111110"]
    assert panel_single.paired == paired(panel, single)
    assert (panel_single.paired.b, panel_single.paired.c) == (4, 1)
    assert panel_single.cost_ratio == pytest.approx(4.0)


def test_a_custom_vote_label_is_the_second_baseline() -> None:
    report = build_report(DATASET, {"single": mode("1" * 10), "vote-5": mode("1" * 10),
                                    "critique": mode("1" * 10)}, vote_label="vote-5")
    assert [(c.mode, c.against) for c in report.comparisons] == [
        ("vote-5", "single"), ("critique", "single"), ("critique", "vote-5")]


def test_missing_outcomes_make_the_report_incomplete_and_are_named() -> None:
    report = build_report(DATASET, {"single": mode("1111111111"), "panel": mode("111111--11")})
    assert not report.complete and report.missing == ("7", "8")
    panel = report.modes[1]
    assert panel.n == 8 and panel.correct == 8
    comparison = report.comparisons[0]
    assert comparison.paired.b + comparison.paired.c == 0          # over the 8 shared items
    assert any(line.startswith("incomplete: 2 item(s)") for line in reading(report))


def test_items_without_an_answer_count_as_wrong_and_are_listed() -> None:
    panel = mode("1111111111")
    panel[2] = outcome("3", False, error="refused: the model declined")
    panel[5] = replace(outcome("6", True), error="degraded")     # an error is never right
    report = build_report(DATASET, {"single": mode("1111111111"), "panel": panel})
    assert report.modes[1].correct == 8 and report.modes[1].errors == 2
    assert report.comparisons[0].paired.c == 2
    assert [(f.mode, f.item_id, f.error) for f in report.failures] == [
        ("panel", "3", "refused: the model declined"), ("panel", "6", "degraded")]
    assert report.complete


def test_no_outcomes_at_all_is_not_complete() -> None:
    report = build_report(DATASET, {})
    assert not report.complete and report.modes == () and reading(report)[0].startswith(
        "incomplete")


@pytest.mark.parametrize(("outcomes", "message"), [
    ({"single": [outcome("99", True)]}, "not an item of sums"),
    ({"single": [outcome("1", True), outcome("1", False)]}, "two outcomes for item '1'"),
])
def test_outcomes_that_do_not_fit_the_dataset_are_refused(
        outcomes: dict[str, list[ItemOutcome]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_report(DATASET, outcomes)


def test_json_has_the_issue_shape_and_round_trips() -> None:
    panel = mode("1111111110", cost=0.004, calls=7)
    panel[0] = outcome("1", False, error="over budget")
    report = build_report(DATASET, {"single": mode("1100110011"), "vote": mode("1110111-11"),
                                    "panel": panel}, vote_samples=5, rehearsal=True)
    data = to_json(report)
    assert json.loads(json.dumps(data)) == data
    assert set(data) >= {"dataset", "modes", "comparisons", "normalisation", "complete",
                         "missing"}
    assert set(data["modes"][0]) >= {"mode", "n", "accuracy", "interval", "cost_usd", "calls",
                                     "tokens", "seconds"}
    assert set(data["comparisons"][0]) == {"mode", "against", "difference", "interval",
                                           "p_value", "b", "c", "cost_ratio", "items"}
    assert data["modes"][0]["interval"] == list(wilson(6, 10))
    assert data["missing"] == ["8"] and data["complete"] is False
    assert data["errors"] == [{"mode": "panel", "item": "1", "error": "over budget"}]
    assert data["readings"] == reading(report)
    assert from_json(json.loads(json.dumps(data))) == report


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("modes"), "modes is missing"),
    (lambda d: d["modes"][1].update(accuracy="high"), r"modes\[1\]\.accuracy must be a number"),
    (lambda d: d["comparisons"][0].update(interval=[0.1]), "interval must be a list of two"),
    (lambda d: d.update(complete="yes"), "complete must be true or false"),
    (lambda d: d["modes"][0].update(n=True), r"modes\[0\]\.n must be an integer"),
    (lambda d: d.update(vote_samples="five"), "vote_samples must be an integer or null"),
])
def test_from_json_says_what_is_wrong_in_one_line(change: object, message: str) -> None:
    data = to_json(build_report(DATASET, {"single": mode("1" * 10), "vote": mode("0" * 10)}))
    change(data)  # type: ignore[operator]
    with pytest.raises(ValueError, match=message) as raised:
        from_json(data)
    assert "\n" not in str(raised.value)
    with pytest.raises(ValueError, match="must be an object"):
        from_json([1, 2])


def _summary(name: str, accuracy: float) -> ModeSummary:
    return ModeSummary(mode=name, n=100, correct=round(accuracy * 100), accuracy=accuracy,
                       interval=wilson(round(accuracy * 100), 100), cost_usd=0.01, calls=1.0,
                       tokens=100.0, seconds=1.0, ties=0, errors=0)


def _report(*comparisons: Comparison, vote_samples: int | None = 5,
            complete: bool = True) -> Report:
    return Report(dataset="d", source="s", normalisation="n",
                  modes=(_summary("single", 0.6), _summary("vote", 0.7), _summary("panel", 0.74)),
                  comparisons=comparisons, complete=complete,
                  missing=() if complete else ("9",), vote_samples=vote_samples)


def _vs(against: str, diff: float, low: float, high: float, ratio: float | None,
        name: str = "panel") -> Comparison:
    return Comparison(mode=name, against=against, cost_ratio=ratio,
                      paired=Paired(diff=diff, low=low, high=high, b=20, c=6, p_value=0.01))


def test_reading_says_beats_only_when_the_interval_excludes_zero() -> None:
    report = _report(_vs("single", 0.14, 0.06, 0.22, 4.1), _vs("vote", 0.03, -0.04, 0.10, 1.2))
    assert reading(report) == ["panel beats a single call by 14 points [6, 22] at 4.1x the cost; "
                               "it does not beat a 5-sample vote (3 points [-4, 10]) at 1.2x "
                               "the cost"]


@pytest.mark.parametrize(("diff", "low", "high", "said"), [
    (0.10, -0.01, 0.21, "does not beat a single call (10 points [-1, 21])"),
    (0.0, -0.05, 0.05, "does not beat a single call (0 points [-5, 5])"),
    (-0.12, -0.20, -0.04, "does worse than a single call by 12 points [-20, -4]"),
    (-0.03, -0.09, 0.02, "does not beat a single call (-3 points [-9, 2])"),
    (0.05, 0.004, 0.10, "beats a single call by 5 points [0.4, 10]"),   # never "[0, 10]"
])
def test_reading_never_overclaims(diff: float, low: float, high: float, said: str) -> None:
    line = reading(_report(_vs("single", diff, low, high, 2.0)))[0]
    assert line == f"panel {said} at 2.0x the cost"


def test_reading_says_less_when_the_interval_and_the_test_disagree() -> None:
    """Newcombe's interval can just exclude 0 while McNemar's exact p is above 0.05 (b=4, c=0
    on 19 items gives [0.1, 43.3] and p = 0.125): no "beats" then."""
    disagree = Comparison(mode="panel", against="single", cost_ratio=1.0,
                          paired=Paired(diff=0.211, low=0.001, high=0.433, b=4, c=0,
                                        p_value=0.125))
    assert reading(_report(disagree)) == [
        "panel does not beat a single call (21 points [0.1, 43]) at 1.0x the cost"]
    worse = replace(disagree, paired=Paired(diff=-0.2, low=-0.4, high=-0.01, b=0, c=4,
                                            p_value=0.125))
    assert reading(_report(worse))[0].startswith("panel does not beat a single call (-20 points")


def test_reading_without_a_known_cost_or_sample_count() -> None:
    report = _report(_vs("vote", 0.2, 0.1, 0.3, None), vote_samples=None)
    assert reading(report) == ["panel beats a majority vote by 20 points [10, 30], cost ratio "
                               "unknown (vote cost nothing)"]


def test_reading_labels_rehearsals_and_partial_reports_first() -> None:
    report = replace(_report(_vs("single", 0.2, 0.1, 0.3, 3.0), complete=False), rehearsal=True)
    lines = reading(report)
    assert lines[0].startswith("REHEARSAL") and lines[1].startswith("incomplete: 1 item(s)")
    assert lines[2].startswith("panel beats a single call")


def test_reading_has_a_line_for_the_vote_against_single() -> None:
    report = _report(_vs("single", 0.1, 0.02, 0.18, 5.0, name="vote"))
    assert reading(report) == ["vote beats a single call by 10 points [2, 18] at 5.0x the cost"]


def test_a_mode_with_no_item_in_common_is_not_told_the_baseline_cost_nothing() -> None:
    """Every panel debate failed (no outcome): the old reading said "single cost nothing" of a
    baseline that cost $0.0014 a question, since the sum over no shared items is 0."""
    report = build_report(DATASET, {"single": mode("1100110011", cost=0.0014), "panel": []})
    (compared,) = report.comparisons
    assert compared.shared == 0 and compared.cost_ratio is None
    lines = reading(report)
    assert "panel has no item in common with a single call yet" in lines
    assert not any("cost nothing" in line for line in lines)
    free = build_report(DATASET, {"single": mode("1100110011", cost=0.0),
                                  "panel": mode("1111111111", cost=0.004)})
    assert any("(single cost nothing)" in line for line in reading(free))  # really $0


def test_a_stop_reason_is_not_a_missing_item_even_in_an_older_stored_report() -> None:
    report = replace(build_report(DATASET, {"single": mode("11111-----")}), stopped="budget")
    data = to_json(report)
    assert data["missing"] == ["6", "7", "8", "9", "10"] and data["stopped"] == "budget"
    assert from_json(data) == report
    older = {**data, "missing": [*data["missing"], "stopped: today's budget has $0 left"]}
    del older["stopped"]
    back = from_json(older)
    assert back.missing == report.missing and back.stopped == "today's budget has $0 left"
