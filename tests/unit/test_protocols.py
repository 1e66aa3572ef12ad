"""What each protocol declares about itself: phase names (one name in its plan and its run), the
phases that judge, the final steps a replay with another model runs again, and what a replay
with more rounds adds in each mode."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.debate import prepare, run_debate
from engine.core.presets import resolve_preset
from engine.core.replay import replay_request, reused_steps
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.options import DebateOptions
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.protocols import PROTOCOLS, get_protocol
from engine.provider.rehearsal import RehearsalModel
from engine.reading.outcomes import CritiqueOutcome, CritiqueStop, PanelOutcome, PanelStop
from engine.settings import EngineSettings
from engine.vocabulary import MAX_REPLAY_ROUNDS, MAX_ROUNDS, Mode

OFFLINE = EngineSettings(rehearsal=True)
#: Requests that put every phase and step of their mode in the plan.
FULL: dict[Mode, dict[str, Any]] = {
    Mode.SIMPLE: {"rounds": 2},
    Mode.STRUCTURED: {"rounds": 2},
    Mode.CONSENSUS: {"judges": 3},
    Mode.PANEL: {"rounds": 2, "options": {"ground_truth": "yes"}},
    Mode.CRITIQUE: {"rounds": 3, "options": {"convergence_judge": True}},
    Mode.REDTEAM: {},
}


def plan_of(mode: Mode) -> Any:
    return prepare(OFFLINE, DebateRequest(topic="Should we?", mode=mode, **FULL[mode])).plan


def plan_phases(mode: Mode) -> list[str]:
    phases: list[str] = []
    for call in sorted(plan_of(mode).calls, key=lambda c: c.depth):
        if call.phase not in phases:
            phases.append(call.phase)
    return phases


def is_subsequence(short: list[str], long: list[str]) -> bool:
    found = iter(long)
    return all(name in found for name in short)


def test_every_mode_has_its_protocol() -> None:
    assert set(PROTOCOLS) == set(Mode)
    assert all(get_protocol(m).mode is m for m in Mode)


@pytest.mark.parametrize("mode", list(Mode))
async def test_the_run_goes_through_the_plans_phases_by_the_same_names(mode: Mode) -> None:
    prepared = prepare(OFFLINE, DebateRequest(topic="Should we?", mode=mode, **FULL[mode]))
    result = await run_debate(prepared, debate_id=f"d-{mode}", settings=OFFLINE,
                              llm=RehearsalModel(), store=MemoryCheckpointStore(),
                              sink=MemoryEventSink())
    ran = [p.name for p in result.phases]
    planned = plan_phases(mode)
    if mode is Mode.CRITIQUE:          # the critic may be satisfied before the round limit
        assert is_subsequence(ran, planned) and ran[-1] == planned[-1]
    else:
        assert ran == planned


@pytest.mark.parametrize("mode", list(Mode))
def test_judging_phases_are_phases_of_the_plan(mode: Mode) -> None:
    assert get_protocol(mode).judging_phases <= set(plan_phases(mode))


@pytest.mark.parametrize(("mode", "judging"), [
    (Mode.SIMPLE, {"verdict"}), (Mode.STRUCTURED, {"judging"}), (Mode.CONSENSUS, {"judging"}),
    (Mode.PANEL, {"synthesis", "grading"}), (Mode.CRITIQUE, set()),
    (Mode.REDTEAM, {"synthesis"}),
])
def test_judging_phases(mode: Mode, judging: set[str]) -> None:
    assert get_protocol(mode).judging_phases == judging


def matched_by_name(key: str) -> bool:
    """How replay told final steps apart before each protocol declared them (string matching)."""
    return key.startswith(("judge/", "critique/converged/")) or key.endswith(
        ("/verdict", "/synthesis", "/grade", "/final", "structured/judge"))


@pytest.mark.parametrize("mode", list(Mode))
def test_final_steps_are_the_ones_replay_matched_by_name(mode: Mode) -> None:
    keys = {c.key for c in plan_of(mode).calls}
    final = {k for k in keys if k in get_protocol(mode).final_steps}
    assert final and final == {k for k in keys if matched_by_name(k)}
    assert final != keys


SOURCE = DebateRequest(topic="Should we?", mode=Mode.PANEL, rounds=1,
                       options={"role_models": {"panelist": "m-1"}})


def replayed(source: DebateRequest = SOURCE, **change: Any) -> DebateRequest:
    return replay_request(source, protocol=get_protocol(source.mode),
                          preset=resolve_preset(OFFLINE, source.preset), **change)


def test_a_replay_with_another_synthesizer_renames_only_the_final_models() -> None:
    request = replayed(synthesizer="m-2")
    models = request.options.role_models
    assert models["panelist"] == "m-1"
    assert all(models[k] == "m-2" for k in ("synthesizer", "judge", "panel/synthesis",
                                            "panel/grade"))
    assert request.no_cache and request.rounds == 1
    # the bookkeeping is not an option a request could carry
    assert "replay" not in request.options.model_dump()


@pytest.mark.parametrize(("mode", "rounds", "more", "expected"), [
    (Mode.SIMPLE, 0, 1, 1), (Mode.SIMPLE, 2, 3, 5), (Mode.STRUCTURED, 1, 2, 3),
    (Mode.CONSENSUS, 1, 1, 2), (Mode.PANEL, 1, 2, 3), (Mode.CRITIQUE, 3, 2, 5),
])
def test_a_replay_adds_the_modes_rounds(mode: Mode, rounds: int, more: int,
                                        expected: int) -> None:
    source = SOURCE.model_copy(update={"mode": mode, "rounds": rounds})
    request = replayed(source, more_rounds=more)
    assert request.rounds == expected
    assert request.options.role_models == SOURCE.options.role_models  # no new model


@pytest.mark.parametrize(("mode", "rounds", "more", "message"), [
    (Mode.PANEL, 1, None, "say what to change"), (Mode.PANEL, 1, 0, "say what to change"),
    (Mode.PANEL, 1, MAX_REPLAY_ROUNDS + 1, f"1 to {MAX_REPLAY_ROUNDS}"),
    (Mode.PANEL, 2, 2, "ran 2 reflection rounds and runs at most 3: --rounds may add at most 1"),
    (Mode.PANEL, 3, 1, "ran 3 reflection rounds and runs at most 3: it has none left to add"),
    (Mode.SIMPLE, 4, 2, f"ran 4 rebuttal rounds and runs at most {MAX_ROUNDS}"),
    (Mode.STRUCTURED, 5, 1, "ran 5 cross-examination rounds"),
    (Mode.CRITIQUE, 4, 3, "ran 4 critique rounds"),
    (Mode.REDTEAM, 1, 1, "a redteam debate is one fixed chain of steps with no rounds to add"),
])
def test_a_replay_refuses_rounds_the_mode_cannot_add(mode: Mode, rounds: int, more: int | None,
                                                     message: str) -> None:
    source = SOURCE.model_copy(update={"mode": mode, "rounds": rounds})
    with pytest.raises(InvalidRequest, match=message) as caught:
        replayed(source, more_rounds=more)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("outcome", [
    CritiqueOutcome(stopped_because=CritiqueStop.CRITIC_SATISFIED, rounds_run=1, round_limit=3,
                    rounds=[], final=None, latest_proposal=None),
    PanelOutcome(panelists=[], agreement_by_round=[], rounds_run=1,
                 stopped_because=PanelStop.ALL_APPROVED, synthesis=None),
])
def test_an_exchange_that_stopped_early_has_no_rounds_to_continue(outcome: Any) -> None:
    source = SOURCE.model_copy(update={"mode": outcome.mode})
    with pytest.raises(InvalidRequest, match="stopped before its round limit because"):
        replayed(source, more_rounds=1, outcome=outcome)


@pytest.mark.parametrize(("mode", "rounds", "more", "new"), [
    (Mode.SIMPLE, 1, 1, {"simple/rebuttal/2/pro", "simple/rebuttal/2/con", "simple/verdict"}),
    (Mode.STRUCTURED, 1, 1, {"structured/cross/2/pro", "structured/cross/2/con",
                             "structured/closing/pro", "structured/closing/con",
                             "structured/judge"}),
    (Mode.PANEL, 1, 1, {"panel/answer/2/" + n for n in ("pragmatic-engineer",
                                                         "sceptical-economist", "risk-officer")}
     | {"panel/synthesis"}),
    (Mode.CRITIQUE, 1, 1, {"critique/critique/2", "critique/proposal/2", "critique/final"}),
])
def test_a_replay_reads_every_step_before_the_new_rounds_and_runs_the_rest(
        mode: Mode, rounds: int, more: int, new: set[str]) -> None:
    source = SOURCE.model_copy(update={"mode": mode, "rounds": rounds, "options": DebateOptions()})
    before = prepare(OFFLINE, source).plan
    after = prepare(OFFLINE, replayed(source, more_rounds=more)).plan
    reuse = reused_steps(before, after, [c.key for c in before.calls])
    assert set(reuse) == {c.key for c in before.calls} - new
    assert {c.key for c in after.calls} - set(reuse) == new


def test_a_replay_with_another_synthesizer_runs_the_final_steps_again() -> None:
    source = SOURCE.model_copy(update={"options": DebateOptions()})
    plan = prepare(OFFLINE, source).plan
    reuse = reused_steps(plan, plan, [c.key for c in plan.calls],
                         rerun=get_protocol(Mode.PANEL).final_steps)
    assert set(reuse) == {c.key for c in plan.calls} - {"panel/synthesis"}
