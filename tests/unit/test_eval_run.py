"""What `dialectic eval` reads from each mode's result, how it puts a question to the models,
and which modes it accepts for a dataset (engine/evaluation/run.py, pure)."""

from __future__ import annotations

import pytest

from engine.domain import DebateResult
from engine.errors import InvalidRequest
from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.run import (
    baseline_models,
    baseline_plan,
    check_modes,
    debate_answered,
    question_text,
    step_key,
)
from engine.reading.outcomes import CritiqueOutcome, CritiqueStop, PanelOutcome, PanelStop
from engine.schemas.critique import FinalAnswer
from engine.schemas.panel import PanelSynthesis
from engine.vocabulary import Mode, ResultStatus, Side

NUMBERS = Dataset(name="n", items=(Item(id="1", question="What is 6*7?", answer="42"),),
                  source="t")
YES_NO = Dataset(name="y", items=(Item(id="1", question="Is 7 prime?", answer="yes"),),
                 source="t")
ITEM = NUMBERS.items[0]


def _result(mode: Mode, **fields: object) -> DebateResult:
    return DebateResult.model_validate({"id": "d", "status": ResultStatus.COMPLETED,
                                        "mode": mode, "topic": "t", **fields})


def _panel(answer: str) -> PanelOutcome:
    synthesis = PanelSynthesis(conclusion="c", answer=answer, agreements=[], disagreements=[],
                               rationale="r", confidence=0.5)
    return PanelOutcome(panelists=[], agreement_by_round=[], rounds_run=0,
                        stopped_because=PanelStop.ROUND_LIMIT, synthesis=synthesis)


@pytest.mark.parametrize(("result", "answer", "error"), [
    (_result(Mode.PANEL, outcome=_panel("The answer is 42.")), "42", None),
    (_result(Mode.CRITIQUE, outcome=CritiqueOutcome(
        stopped_because=CritiqueStop.CONVERGED, rounds_run=1, round_limit=2, rounds=[],
        final=FinalAnswer(summary="s", answer="41", key_points=["k"], open_issues=[]),
        latest_proposal=None)), "41", None),
    (_result(Mode.CRITIQUE, outcome=CritiqueOutcome(
        stopped_because=CritiqueStop.ROUND_LIMIT, rounds_run=2, round_limit=2, rounds=[],
        final=None, latest_proposal=None), complete=False,
        missing=["final answer (degraded)"]), None, "no answer: final answer (degraded)"),
    (_result(Mode.PANEL, outcome=_panel("42"), complete=False, missing=["answer/0/a: x"]),
     "42", "incomplete: answer/0/a: x"),
])
def test_a_debate_answers_with_what_its_mode_ends_with(result: DebateResult, answer: str | None,
                                                       error: str | None) -> None:
    found = debate_answered(ITEM, result)
    assert found.normalised == answer and found.error == error


@pytest.mark.parametrize(("winner", "answer"), [(Side.PRO, "yes"), (Side.CON, "no"),
                                                (Side.TIE, None)])
def test_consensus_answers_yes_when_pro_wins(winner: Side, answer: str | None) -> None:
    found = debate_answered(YES_NO.items[0], _result(Mode.CONSENSUS, winner=winner))
    assert found.normalised == answer


@pytest.mark.parametrize(("modes", "dataset", "says"), [
    (("single", "consensus"), NUMBERS, "consensus answers yes or no"),
    (("single", "chorus"), NUMBERS, "unknown evaluation mode 'chorus'"),
    ((), NUMBERS, "no modes given"),
])
def test_modes_a_dataset_cannot_take_are_refused(modes: tuple[str, ...], dataset: Dataset,
                                                 says: str) -> None:
    with pytest.raises(InvalidRequest, match=says):
        check_modes(modes, dataset)


def test_modes_are_kept_in_order_once_each() -> None:
    assert check_modes(("vote", "single", "vote", "consensus"), YES_NO) == (
        "vote", "single", "consensus")


def test_choices_are_lettered_in_the_question() -> None:
    item = Item(id="1", question="Which colour?", answer="blue", choices=("red", "blue"))
    assert question_text(item) == "Which colour?\nA. red\nB. blue"


@pytest.mark.parametrize(("mode", "samples", "models", "expected"), [
    ("single", 5, (), [None]),
    ("single", 5, ("a", "b"), ["a"]),
    ("vote", 3, (), [None, None, None]),
    ("vote", 5, ("a", "b"), ["a", "b", "a", "b", "a"]),
])
def test_a_votes_samples_go_round_the_models(mode: str, samples: int, models: tuple[str, ...],
                                             expected: list[str | None]) -> None:
    assert baseline_models(mode, samples, models) == expected
    plan = baseline_plan(ITEM, mode, samples, models)
    assert [c.key for c in plan.calls] == [step_key(mode, i) for i in range(len(expected))]
    assert plan.depth == 1   # every sample at once
