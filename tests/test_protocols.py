"""What each protocol declares about itself: phase names (one name in its plan and its run), the
phases that judge, and the final steps a replay always runs again."""

from __future__ import annotations

from typing import Any

import pytest

from engine.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.protocols import PROTOCOLS, get_protocol
from engine.rehearsal import RehearsalModel
from engine.replay import replay_request
from engine.settings import EngineSettings
from engine.vocabulary import MAX_REPLAY_ROUNDS, MAX_ROUNDS, Mode

OFFLINE = EngineSettings(rehearsal=True)
#: Requests that put every phase and step of their mode in the plan.
FULL: dict[Mode, dict[str, Any]] = {
    Mode.SIMPLE: {"rounds": 2},
    Mode.STRUCTURED: {},
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
SOURCE_KEYS = ["panel/answer/0/a", "panel/answer/1/a", "panel/synthesis", "panel/grade"]


def test_a_replay_reuses_every_step_but_the_final_ones_and_renames_their_model() -> None:
    replay = replay_request(SOURCE, protocol=get_protocol(Mode.PANEL),
                            source_keys=SOURCE_KEYS, default_rounds=1, synthesizer="m-2")
    assert replay.reuse == ("panel/answer/0/a", "panel/answer/1/a")
    models = replay.request.options.role_models
    assert models["panelist"] == "m-1"
    assert all(models[k] == "m-2" for k in ("synthesizer", "judge", "panel/synthesis",
                                            "panel/grade"))
    assert replay.request.no_cache and replay.request.rounds == 1
    # the bookkeeping is not an option a request could carry
    assert "replay" not in replay.request.options.model_dump()


@pytest.mark.parametrize(("rounds", "more", "expected"), [(1, 1, 2), (4, 3, MAX_ROUNDS)])
def test_a_replay_adds_rounds_up_to_the_limit(rounds: int, more: int, expected: int) -> None:
    source = SOURCE.model_copy(update={"rounds": rounds})
    replay = replay_request(source, protocol=get_protocol(Mode.PANEL),
                            source_keys=SOURCE_KEYS, default_rounds=1, more_rounds=more)
    assert replay.request.rounds == expected
    assert replay.request.options.role_models == SOURCE.options.role_models  # no new model


@pytest.mark.parametrize(("more", "synthesizer", "message"), [
    (None, None, "say what to change"), (0, None, "say what to change"),
    (MAX_REPLAY_ROUNDS + 1, None, f"1 to {MAX_REPLAY_ROUNDS}"),
])
def test_a_replay_refuses_what_it_cannot_do(more: int | None, synthesizer: str | None,
                                            message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        replay_request(SOURCE, protocol=get_protocol(Mode.PANEL),
                       source_keys=SOURCE_KEYS, default_rounds=1, more_rounds=more,
                       synthesizer=synthesizer)
