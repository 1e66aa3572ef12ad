"""The panel, critique and redteam modes end to end: offline rehearsal runs, stop rules,
parallelism, agreement, routing, schema validation and resuming from checkpoints.

Scripted behaviour comes from `ScriptedLLM`, an in-process `LLMClient` that starts from the
rehearsal model's schema-valid output and overrides fields per role. It records every call, the
most calls in flight at once, and each call's *level* (1 + the highest level finished before it
started), so the critical path is measured without depending on the wall clock.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr, ValidationError

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, DebateResult, EventKind, Usage
from engine.errors import InvalidRequest, LLMTransientError
from engine.options import DebateOptions
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.protocols import get_protocol
from engine.protocols.critique import round_limit
from engine.protocols.panel import panelists_for, reflection_rounds, stance_agreement
from engine.provider.gateway import strict_schema
from engine.provider.llm import CallSpec, Reply, T
from engine.provider.rehearsal import RehearsalModel
from engine.reading.outcomes import CritiqueOutcome, PanelOutcome, RedTeamOutcome
from engine.schemas.critique import Convergence, CritiqueReview, FinalAnswer, Proposal
from engine.schemas.panel import PanelAnswer, PanelGrade, PanelReflection, PanelSynthesis
from engine.schemas.redteam import (
    Analysis,
    Decision,
    RedTeamChallenge,
    Revision,
    StrategyProposal,
)
from engine.settings import EngineSettings, PresetSpec
from tests.fakes.fixtures import DEFAULT_MODEL, spotlit

TOPIC = "Should we move billing to PostgreSQL?"
OFFLINE = EngineSettings(rehearsal=True)


def live(**extra: Any) -> EngineSettings:
    """Real model names (`model_for`), no network: the scripted client is in-process."""
    return EngineSettings(openai_api_key=SecretStr("x"), openai_base_url="http://127.0.0.1:9",
                          **extra)


LIVE = live()
MODES = ("panel", "critique", "redteam")

Override = Callable[[int], dict[str, Any]]          # nth call of the role (0-based) -> fields
FailWhen = Callable[[CallSpec[Any], int], bool]


class ScriptedLLM:
    """Rehearsal values with scripted fields per role (exact role first, then its family)."""

    def __init__(self, overrides: dict[str, Override] | None = None,
                 fail: FailWhen | None = None, latency: float = 0.05) -> None:
        self.overrides = overrides or {}
        self.fail = fail
        self.latency = latency
        self.base = RehearsalModel()
        self.calls: list[CallSpec[Any]] = []
        self.per_role: Counter[str] = Counter()
        self.in_flight = self.max_in_flight = 0
        self.done_level = self.max_level = 0

    @property
    def rehearsal(self) -> bool:
        return False

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        n = self.per_role[spec.role]
        self.per_role[spec.role] += 1
        self.calls.append(spec)
        level = self.done_level + 1
        self.max_level = max(self.max_level, level)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
            if self.fail is not None and self.fail(spec, n):
                raise LLMTransientError("scripted outage", status=503)
            data = (await self.base.complete(spec)).value.model_dump()
            override = self.overrides.get(spec.role) or self.overrides.get(
                spec.role.split("/", 1)[0])
            if override is not None:
                data.update(override(n))
            value = spec.schema.model_validate(data)
        finally:
            self.in_flight -= 1
            self.done_level = max(self.done_level, level)
        return Reply(value=value, usage=Usage(prompt_tokens=120, completion_tokens=60),
                     model=spec.model)

    async def aclose(self) -> None:
        return None

    def roles(self) -> list[str]:
        return [c.role for c in self.calls]


@dataclass
class Run:
    result: DebateResult
    store: MemoryCheckpointStore
    sink: MemoryEventSink
    keys: set[str]
    planned: list[str]
    depth: int

    def events(self, kind: EventKind) -> list[dict[str, Any]]:
        return [e.data for e in self.sink.events if e.kind == kind]


async def debate(mode: str | None, llm: Any, *, settings: EngineSettings = LIVE,
                 store: MemoryCheckpointStore | None = None, **request: Any) -> Run:
    if mode is not None:
        request["mode"] = mode
    prepared = prepare(settings, DebateRequest(topic=TOPIC, **request))
    store = store or MemoryCheckpointStore()
    sink = MemoryEventSink()
    result = await run_debate(prepared, debate_id="d-1", settings=settings, llm=llm,
                              store=store, sink=sink)
    return Run(result, store, sink, set(store.keys("d-1")),
               [c.key for c in prepared.plan.calls], prepared.plan.depth)


def critique_of(run: Run) -> CritiqueOutcome:
    assert isinstance(run.result.outcome, CritiqueOutcome)
    return run.result.outcome


def panel_of(run: Run) -> PanelOutcome:
    assert isinstance(run.result.outcome, PanelOutcome)
    return run.result.outcome


def redteam_of(run: Run) -> RedTeamOutcome:
    assert isinstance(run.result.outcome, RedTeamOutcome)
    return run.result.outcome


def never_satisfied(n: int) -> dict[str, Any]:
    return {"satisfied": False}


def always(**fields: Any) -> Override:
    return lambda n: dict(fields)


# --- every mode, offline ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_each_mode_runs_offline_to_completion(mode: str) -> None:
    run = await debate(mode, RehearsalModel(), settings=OFFLINE, rounds=2)
    assert run.result.status == "completed"
    assert run.result.complete, run.result.missing
    assert run.result.rehearsal and run.result.mode == mode
    assert run.result.verdict
    assert run.keys <= set(run.planned)
    assert all(p.steps and not p.degraded for p in run.result.phases)


@pytest.mark.parametrize(
    ("mode", "request_", "depth"),
    [
        ("panel", {"rounds": 2}, 4),                    # answers, 2 reflections, synthesis
        ("panel", {"rounds": 1, "options": {"ground_truth": "yes"}}, 4),  # + grade
        ("critique", {"rounds": 3}, 8),                 # 1 + 2 x 3 + final
        ("critique", {"rounds": 2, "options": {"convergence_judge": True}}, 6),
        ("redteam", {}, 5),
    ],
)
async def test_a_full_run_makes_exactly_the_planned_calls_on_the_critical_path(
    mode: str, request_: dict[str, Any], depth: int
) -> None:
    script = {"critic": never_satisfied, "judge": always(converged=False)}
    llm = ScriptedLLM(script if mode == "critique" else {})
    run = await debate(mode, llm, **request_)
    assert run.keys == set(run.planned)
    assert len(run.planned) == len(set(run.planned)) == len(llm.calls)
    assert run.depth == depth
    assert llm.max_level == depth       # wall time = dependent depth x one call's latency


# --- critique ---------------------------------------------------------------------------------


async def test_critic_satisfied_at_round_one_stops_at_round_one() -> None:
    llm = ScriptedLLM({"critic": always(satisfied=True)})
    run = await debate("critique", llm, rounds=4)
    assert run.keys == {"critique/proposal/0", "critique/critique/1", "critique/final"}
    out = critique_of(run)
    assert out.stopped_because == "critic_satisfied"
    assert out.rounds_run == 1
    assert llm.roles().count("critic") == 1
    assert out.final is not None
    assert "the critic was satisfied" in run.result.rationale


async def test_critic_satisfied_later_stops_that_round() -> None:
    llm = ScriptedLLM({"critic": lambda n: {"satisfied": n == 1}})
    run = await debate("critique", llm, rounds=5)
    assert critique_of(run).stopped_because == "critic_satisfied"
    assert critique_of(run).rounds_run == 2
    assert "critique/proposal/2" not in run.keys and "critique/proposal/1" in run.keys


@pytest.mark.parametrize("limit", [1, 3, 5])
async def test_never_satisfied_runs_exactly_the_round_limit(limit: int) -> None:
    llm = ScriptedLLM({"critic": never_satisfied})
    run = await debate("critique", llm, rounds=limit)
    out = critique_of(run)
    assert out.stopped_because == "round_limit"
    assert out.rounds_run == limit == len(out.rounds) and out.round_limit == limit
    assert llm.roles().count("critic") == limit
    assert f"critique/critique/{limit}" in run.keys
    assert f"critique/critique/{limit + 1}" not in run.keys
    assert f"critique/proposal/{limit}" in run.keys and "critique/final" in run.keys
    rounds = run.events(EventKind.ROUND_FINISHED)
    assert [e["round"] for e in rounds] == list(range(1, limit + 1))
    assert all(e["satisfied"] is False for e in rounds)


async def test_convergence_judge_stops_the_exchange() -> None:
    llm = ScriptedLLM({"critic": never_satisfied, "judge": always(converged=True)})
    run = await debate("critique", llm, rounds=4, options={"convergence_judge": True})
    out = critique_of(run)
    assert out.stopped_because == "converged"
    assert out.rounds_run == 2
    assert "critique/converged/2" in run.keys and "critique/converged/1" not in run.keys
    assert "critique/proposal/2" not in run.keys and "critique/final" in run.keys
    assert llm.max_in_flight == 2       # the judge runs beside the critic
    assert out.rounds[-1].converged is True


async def test_satisfied_critic_wins_over_a_converged_verdict_in_the_same_round() -> None:
    llm = ScriptedLLM({"critic": lambda n: {"satisfied": n == 1},
                       "judge": always(converged=True)})
    run = await debate("critique", llm, rounds=4, options={"convergence_judge": True})
    assert critique_of(run).stopped_because == "critic_satisfied"
    assert critique_of(run).rounds_run == 2


async def test_a_judge_that_never_sees_convergence_leaves_the_round_limit() -> None:
    llm = ScriptedLLM({"critic": never_satisfied, "judge": always(converged=False)})
    run = await debate("critique", llm, rounds=3, options={"convergence_judge": True})
    assert critique_of(run).stopped_because == "round_limit"
    assert {k for k in run.keys if "/converged/" in k} == {
        "critique/converged/2", "critique/converged/3"}


async def test_a_degraded_critique_never_stops_the_exchange() -> None:
    llm = ScriptedLLM({"critic": always(satisfied=True)},
                      fail=lambda spec, n: spec.role == "critic" and n == 0)
    run = await debate("critique", llm, rounds=3)
    assert run.result.status == "completed"
    assert critique_of(run).rounds_run == 2
    assert critique_of(run).rounds[0].satisfied is None
    assert any("critique/critique/1" in m for m in run.result.missing)


@pytest.mark.parametrize(
    ("requested", "preset_rounds", "limit"),
    [(2, 1, 2), (None, 0, 3), (0, 4, 4), (0, 0, 3), (5, 1, 5), (9, 1, 5)],
)
def test_critique_round_limit(requested: int | None, preset_rounds: int, limit: int) -> None:
    assert round_limit(requested, PresetSpec(name="p", rounds=preset_rounds)) == limit


# --- panel ------------------------------------------------------------------------------------


async def test_panelists_answer_in_parallel_and_reflect_for_r_rounds() -> None:
    llm = ScriptedLLM()
    run = await debate("panel", llm, rounds=2, options={"panelists": 4})
    names = ["pragmatic-engineer", "sceptical-economist", "risk-officer", "customer-advocate"]
    assert llm.max_in_flight == 4
    assert {f"panel/answer/{r}/{n}" for r in range(3) for n in names} <= run.keys
    assert "panel/synthesis" in run.keys and "panel/answer/3/risk-officer" not in run.keys
    out = panel_of(run)
    assert len(out.agreement_by_round) == 3
    assert out.rounds_run == 2 and out.stopped_because == "round_limit"
    rounds = run.events(EventKind.ROUND_FINISHED)
    assert [e["round"] for e in rounds] == [0, 1, 2]
    assert all([p["panelist"] for p in e["positions"]] == names for e in rounds)
    assert all(isinstance(p["stance"], int) for e in rounds for p in e["positions"])
    assert out.synthesis is not None and run.result.verdict == out.synthesis.conclusion
    assert all(isinstance(p.final, PanelReflection) for p in out.panelists)


async def test_reflection_prompts_show_own_and_others_previous_answers() -> None:
    llm = ScriptedLLM()
    await debate("panel", llm, rounds=1)
    reflect = [c for c in llm.calls if c.role == "panelist/risk-officer"][1]
    assert "Your previous answer:\n## risk-officer" in reflect.prompt.user
    assert "## pragmatic-engineer" in reflect.prompt.user
    assert "## sceptical-economist" in reflect.prompt.user
    assert reflect.schema is PanelReflection


async def test_agreement_by_round_follows_the_stances() -> None:
    stances = {"pragmatic-engineer": [2, 6], "sceptical-economist": [5, 6], "risk-officer": [8, 6]}

    def script(series: list[int]) -> Override:
        return lambda n: {"stance": series[n]}

    llm = ScriptedLLM({f"panelist/{name}": script(s) for name, s in stances.items()})
    run = await debate("panel", llm, rounds=1)
    by_round = panel_of(run).agreement_by_round
    assert by_round[0].agreement == pytest.approx(1 - math.sqrt(6) / 4.5, abs=1e-4)
    assert by_round[0].stance_spread == 6 and by_round[0].mean_stance == 5
    assert by_round[1].agreement == 1.0
    assert [e["agreement"] for e in run.events(EventKind.ROUND_FINISHED)] == [
        by_round[0].agreement, 1.0]


REVIEW = PresetSpec(name="review", mode="panel", rounds=3,
                    perspectives=("security", "performance", "maintainability"))


async def test_multi_perspective_review_stops_when_every_perspective_approves() -> None:
    settings = live(presets={"review": REVIEW})
    llm = ScriptedLLM({"panelist": lambda n: {"approve": n >= 1}})
    run = await debate(None, llm, settings=settings, preset="review")
    out = panel_of(run)
    assert run.result.mode == "panel"
    assert out.stopped_because == "all_approved" and out.rounds_run == 1
    assert len(out.agreement_by_round) == 2
    assert "panel/answer/1/security" in run.keys
    assert not any(k.startswith("panel/answer/2/") for k in run.keys)
    assert [p.name for p in out.panelists] == ["security", "performance", "maintainability"]
    first = next(c for c in llm.calls if c.role == "panelist/performance")
    assert "performance perspective" in first.prompt.system


async def test_one_dissenting_perspective_keeps_the_review_going() -> None:
    settings = live(presets={"review": REVIEW})
    llm = ScriptedLLM({"panelist": always(approve=True),
                       "panelist/security": always(approve=False)})
    run = await debate(None, llm, settings=settings, preset="review")
    assert panel_of(run).stopped_because == "round_limit"
    assert panel_of(run).rounds_run == 3


async def test_an_unnamed_panel_does_not_stop_early_unless_asked() -> None:
    llm = ScriptedLLM({"panelist": always(approve=True)})
    run = await debate("panel", llm, rounds=2)
    assert panel_of(run).rounds_run == 2
    asked = await debate("panel", ScriptedLLM({"panelist": always(approve=True)}), rounds=2,
                         options={"stop_when_all_approve": True})
    assert panel_of(asked).rounds_run == 0
    assert panel_of(asked).stopped_because == "all_approved"


async def test_ground_truth_adds_a_graded_comparison() -> None:
    llm = ScriptedLLM({"judge": always(accuracy=7, completeness=4)})
    truth = "Yes, once the ledger service is isolated."
    run = await debate("panel", llm, rounds=1, options={"ground_truth": truth})
    grade = panel_of(run).grade
    assert "panel/grade" in run.keys
    assert grade is not None and grade.accuracy == 7 and grade.completeness == 4
    assert isinstance(grade.missing_points, list)
    grader = next(c for c in llm.calls if c.role == "judge")
    assert truth in spotlit(grader.prompt.user) and grader.schema is PanelGrade
    assert all(truth not in spotlit(c.prompt.user) for c in llm.calls if c.role != "judge")


async def test_per_panelist_contexts_and_models() -> None:
    llm = ScriptedLLM()
    await debate("panel", llm, rounds=1, options={
        "perspectives": ["a DBA", "a finance lead"],
        "contexts": ["ctx-for-dba", "ctx-for-finance"],
        "models": ["gpt-4.1", ""], "stop_when_all_approve": False,  # both rounds, whatever
    })
    # perspectives the request names are untrusted: numbered, and spotlighted in the prompt
    dba = [c for c in llm.calls if c.role == "panelist/perspective-1"]
    finance = [c for c in llm.calls if c.role == "panelist/perspective-2"]
    assert len(dba) == len(finance) == 2
    assert all("a DBA" in spotlit(c.prompt.user) and "ctx-for-dba" in spotlit(c.prompt.user)
               and "ctx-for-finance" not in c.prompt.user and "DBA" not in c.prompt.system
               for c in dba)
    assert {c.model for c in dba} == {"gpt-4.1"} and {c.model for c in finance} == {DEFAULT_MODEL}


async def test_a_degraded_synthesis_is_reported_not_hidden() -> None:
    llm = ScriptedLLM(fail=lambda spec, n: spec.role == "synthesizer")
    run = await debate("panel", llm, rounds=1)
    assert run.result.status == "completed" and not run.result.complete
    assert run.result.verdict.startswith("No synthesis: [degraded")
    assert "synthesis (degraded)" in run.result.missing
    assert panel_of(run).synthesis is None


@pytest.mark.parametrize(
    ("stances", "agreement"),
    [([5, 5, 5], 1.0), ([1, 10], 0.0), ([1, 1, 10, 10], 0.0), ([4, 6], 1 - 1 / 4.5),
     ([7], None), ([], None)],
)
def test_stance_agreement(stances: list[int], agreement: float | None) -> None:
    got = stance_agreement(stances)
    assert got == (None if agreement is None else pytest.approx(agreement, abs=1e-4))


@pytest.mark.parametrize(
    ("options", "judges", "perspectives", "names"),
    [
        ({}, None, (), ["pragmatic-engineer", "sceptical-economist", "risk-officer"]),
        ({"panelists": 2}, 5, (), ["pragmatic-engineer", "sceptical-economist"]),
        ({}, 2, (), ["pragmatic-engineer", "sceptical-economist"]),
        ({}, None, ("security", "cost"), ["security", "cost"]),
        ({"panelists": 3}, None, ("security", "cost"), ["security", "cost", "security-2"]),
        ({"perspectives": ["an SRE"]}, None, (), ["perspective-1", "perspective-1-2"]),
    ],
)
def test_who_sits_on_the_panel(options: dict[str, Any], judges: int | None,
                               perspectives: tuple[str, ...], names: list[str]) -> None:
    preset = PresetSpec(name="p", perspectives=perspectives)
    chosen = panelists_for(preset, DebateOptions.model_validate(options), judges)
    assert [m.name for m in chosen] == names


@pytest.mark.parametrize(("requested", "preset_rounds", "rounds"),
                         [(None, 1, 1), (0, 2, 2), (0, 0, 1), (5, 1, 3), (2, 1, 2)])
def test_reflection_rounds(requested: int | None, preset_rounds: int, rounds: int) -> None:
    assert reflection_rounds(requested, PresetSpec(name="p", rounds=preset_rounds)) == rounds


def test_the_plan_counts_panelists_asked_for_by_judges() -> None:
    prepared = prepare(LIVE, DebateRequest(topic=TOPIC, mode="panel", rounds=1, judges=2))
    assert sum(1 for c in prepared.plan.calls if c.key.startswith("panel/answer/0/")) == 2


# --- redteam ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("reached", "routing"), [(False, "human_review"), (True, "none")])
async def test_consensus_flag_routes_the_decision(reached: bool, routing: str) -> None:
    llm = ScriptedLLM({"synthesizer": always(consensus_reached=reached)})
    run = await debate("redteam", llm)
    assert run.result.routing == routing
    out = redteam_of(run)
    assert out.consensus_reached is reached
    assert out.synthesis is not None and out.synthesis.execution_parameters
    assert out.mitigations == out.synthesis.mitigation_steps and out.severity is not None
    assert ("no consensus" in run.result.verdict) is not reached


async def test_each_redteam_role_has_its_own_temperature_and_sees_the_work_before_it() -> None:
    llm = ScriptedLLM()
    await debate("redteam", llm)
    assert [(c.role, c.temperature) for c in llm.calls] == [
        ("analyst", 0.2), ("strategist", 0.7), ("redteam", 0.9), ("strategist", 0.7),
        ("synthesizer", 0.3)]
    assert [c.schema for c in llm.calls] == [Analysis, StrategyProposal, RedTeamChallenge,
                                             Revision, Decision]
    assert "## Challenge" in llm.calls[3].prompt.user and "## Analysis" in llm.calls[3].prompt.user


async def test_a_missing_decision_goes_to_review() -> None:
    llm = ScriptedLLM(fail=lambda spec, n: spec.role == "synthesizer")
    run = await debate("redteam", llm)
    assert run.result.status == "completed"
    assert run.result.routing == "human_review"
    assert run.result.verdict.startswith("No decision")
    assert "decision (degraded)" in run.result.missing


# --- schemas ----------------------------------------------------------------------------------

ALL_SCHEMAS: tuple[type[BaseModel], ...] = (
    PanelAnswer, PanelReflection, PanelSynthesis, PanelGrade, Proposal, CritiqueReview,
    Convergence, FinalAnswer, Analysis, StrategyProposal, RedTeamChallenge, Revision, Decision,
)


def _valid(schema: type[BaseModel]) -> dict[str, Any]:
    spec = CallSpec(model="rehearsal", prompt=_prompt(), schema=schema, role="panelist/x")
    return asyncio.run(RehearsalModel().complete(spec)).value.model_dump()


def _prompt() -> Any:
    from engine.provider.llm import Prompt

    return Prompt(system="s", user=f"Question: {TOPIC}")


@pytest.mark.parametrize(
    ("schema", "field", "bad"),
    [
        (PanelAnswer, "stance", 11), (PanelAnswer, "stance", 0),
        (PanelAnswer, "confidence", 1.5), (PanelAnswer, "key_points", []),
        (PanelGrade, "accuracy", 0), (PanelGrade, "completeness", 12),
        (CritiqueReview, "severity", "extreme"), (CritiqueReview, "satisfied", "maybe"),
        (Decision, "confidence", -0.1), (RedTeamChallenge, "severity", "apocalyptic"),
        (Analysis, "metrics", []), (Decision, "execution_parameters", [{"name": "x"}]),
    ],
)
def test_schemas_reject_out_of_range_values(schema: type[BaseModel], field: str, bad: Any) -> None:
    data = _valid(schema)
    schema.model_validate(data)
    with pytest.raises(ValidationError):
        schema.model_validate({**data, field: bad})


@pytest.mark.parametrize("schema", ALL_SCHEMAS)
def test_schemas_fit_openai_strict_mode(schema: type[BaseModel]) -> None:
    """Every field required, no free-form maps, extra keys forbidden."""
    root = strict_schema(schema)
    nodes = [root, *root.get("$defs", {}).values()]
    for node in nodes:
        assert node["additionalProperties"] is False
        assert set(node["required"]) == set(node["properties"])
    with pytest.raises(ValidationError):
        schema.model_validate({**_valid(schema), "surprise": 1})


# --- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("panel", {"panelists": "many"}), ("panel", {"panelists": 1}),
        ("panel", {"panelists": 99}), ("panel", {"contexts": "one context"}),
        ("panel", {"perspectives": [1, 2]}), ("panel", {"stop_when_all_approve": "yes"}),
        ("critique", {"convergence_judge": "yes"}), ("panel", {"surprise": 1}),
        ("panel", {"replay": {"source": "x", "reuse": []}}),
        ("panel", {"policy": "p" * 20_001}), ("panel", {"ground_truth": 7}),
        ("panel", {"role_models": {"Bad Key": "gpt-4o"}}),
        ("panel", {"role_models": {f"k{i}": "gpt-4o" for i in range(33)}}),
        ("panel", {"models": ["m"] * 9}), ("panel", {"contexts": ["c" * 4001]}),
    ],
)
def test_bad_options_are_refused_before_anything_runs(mode: Any, options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="options"):
        DebateRequest(topic=TOPIC, mode=mode, options=options)


@pytest.mark.parametrize("options", [
    {"role_models": {"judge": "gpt-9-imaginary"}}, {"models": ["", "very-expensive"]},
])
def test_only_models_of_known_price_may_be_named(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest, match=rf"price is unknown .*configured: .*{DEFAULT_MODEL}"):
        prepare(LIVE, DebateRequest(topic=TOPIC, mode="panel", options=options))


@pytest.mark.parametrize("model", ["o4-mini", "gpt-4o-mini-2024-07-18", "llama3.2"])
def test_a_model_the_library_prices_or_the_operator_runs_may_be_named(model: str) -> None:
    live = LIVE.model_copy(update={"models": {"judge": "llama3.2"}})   # a local model, unpriced
    prepare(live, DebateRequest(topic=TOPIC, mode="panel",
                                options={"role_models": {"synthesizer": model}}))


def test_the_new_modes_are_registered() -> None:
    assert {get_protocol(m).mode for m in MODES} == set(MODES)


# --- resuming ---------------------------------------------------------------------------------

RESUME_CASES = [
    ("panel", {"rounds": 2, "options": {"ground_truth": "yes"}}),
    ("critique", {"rounds": 3, "options": {"convergence_judge": True}}),
    ("redteam", {}),
]


@pytest.mark.parametrize(("mode", "request_"), RESUME_CASES)
async def test_a_finished_debate_resumes_without_a_single_call(
    mode: str, request_: dict[str, Any]
) -> None:
    first = await debate(mode, ScriptedLLM({"critic": never_satisfied}), **request_)
    again = ScriptedLLM({"critic": always(satisfied=True)})  # would change the path if called
    second = await debate(mode, again, store=first.store, **request_)
    assert again.calls == []
    assert second.result.outcome == first.result.outcome
    assert second.result.verdict == first.result.verdict
    assert second.result.cost.reused_calls == len(first.keys)


@pytest.mark.parametrize(
    ("mode", "request_", "role", "key"),
    [
        ("redteam", {}, "redteam", "redteam/challenge"),
        ("panel", {"rounds": 2}, "panelist/risk-officer", "panel/answer/1/risk-officer"),
        ("critique", {"rounds": 2}, "proposer", "critique/proposal/1"),
    ],
)
async def test_a_partial_debate_resumes_only_what_was_degraded(
    mode: str, request_: dict[str, Any], role: str, key: str
) -> None:
    target = 1 if key.endswith(("/1/risk-officer", "/proposal/1")) else 0

    def outage(spec: CallSpec[Any], n: int) -> bool:
        return spec.role == role and n == target

    broken = await debate(mode, ScriptedLLM({"critic": never_satisfied}, fail=outage),
                          **request_)
    assert broken.result.status == "completed" and not broken.result.complete
    assert [d["key"] for d in broken.result.degraded] == [key]
    assert key not in broken.keys
    healthy = ScriptedLLM({"critic": never_satisfied})
    resumed = await debate(mode, healthy, store=broken.store, **request_)
    assert healthy.roles() == [role]
    assert resumed.result.complete and key in resumed.keys
    assert resumed.keys == broken.keys | {key}
