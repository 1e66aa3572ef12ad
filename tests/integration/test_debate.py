"""Debates end to end through the real openai client and the fake server: concurrency, resume,
deadlines, filters, auth failures, evidence, events, cost, neutral judge labels."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json

import pytest

from engine.core.debate import prepare, run_debate
from engine.core.runner import DebateContext
from engine.domain import DebateRequest, EventKind, StepRecord
from engine.errors import InvalidRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink, MemoryEvidence
from engine.provider.gateway import OpenAIGateway
from engine.provider.rehearsal import RehearsalModel
from engine.settings import EngineSettings
from tests.fakes.fixtures import DEFAULT_MODEL, TEST_API_KEY, gateway_settings, spotlit
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should a startup adopt microservices from day one?"
PRO = "arguing FOR the proposition"
CON = "arguing AGAINST the proposition"


async def _debate(settings: EngineSettings, mode: str = "consensus", *, store=None, sink=None,
                  evidence=None, debate_id: str = "d1", llm=None,
                  **req):  # type: ignore[no-untyped-def]
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode=mode, **req))
    llm = llm or OpenAIGateway(settings)
    try:
        return await run_debate(prepared, debate_id=debate_id, settings=settings, llm=llm,
                                store=store or MemoryCheckpointStore(),
                                sink=sink or MemoryEventSink(), evidence=evidence)
    finally:
        await llm.aclose()


def _hash(body: dict) -> str:  # type: ignore[type-arg]
    msgs = {m["role"]: m["content"] for m in body["messages"][:2]}
    canon = json.dumps({"system": msgs["system"], "user": msgs["user"]}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


async def test_independent_calls_are_in_flight_together() -> None:
    """The protocol's shape, not reply realism: short replies, so building four judges' prompts
    over long transcripts in this same process never outlasts the provider's latency."""
    async with FakeOpenAI(latency=0.4, replies="minimal") as fake:
        result = await _debate(gateway_settings(fake.base_url))
    assert result.status == "completed" and result.complete
    # openings, cross and closing are pairs; the four judges run together
    assert fake.max_in_flight == 4
    openings = [r for r in fake.requests[:2]]
    assert {("FOR" in r.system) for r in openings} == {True, False}
    assert len(fake.requests) == 10


async def test_simple_mode_runs_both_sides_of_each_round_together() -> None:
    async with FakeOpenAI(latency=0.2, replies="minimal") as fake:
        result = await _debate(gateway_settings(fake.base_url), "simple", rounds=2)
    assert result.status == "completed"
    assert len(fake.requests) == 2 + 4 + 1
    assert fake.max_in_flight == 2
    assert [p.name for p in result.phases] == ["opening", "rebuttal 1", "rebuttal 2", "verdict"]


class CrashAfter(MemoryCheckpointStore):
    """A checkpoint store that kills the running debate after k stored steps (a crash)."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k
        self.task: asyncio.Task[object] | None = None

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        stored = await super().put(debate_id, record)
        if self.puts >= self.k and self.task is not None:
            self.task.cancel()
        return stored


@pytest.mark.parametrize("k", [1, 3, 6, 8])
async def test_resume_never_repeats_a_finished_step(k: int) -> None:
    async with FakeOpenAI(latency=0.02) as fake:
        settings = gateway_settings(fake.base_url)
        store = CrashAfter(k)
        store.task = asyncio.ensure_future(_debate(settings, store=store))
        with pytest.raises(asyncio.CancelledError):
            await store.task
        stored = {r.prompt_hash for r in store._records.values()}
        assert len(stored) >= k
        first_run = len(fake.requests)
        store.task = None
        result = await _debate(settings, store=store)
        second = fake.requests[first_run:]
    assert result.status == "completed" and result.complete
    assert result.cost.reused_calls == len(stored)
    assert not stored & {_hash(r.body) for r in second}, "a finished step was called again"
    assert len(second) == 10 - len(stored)


async def test_rerun_of_a_finished_debate_calls_nothing() -> None:
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url)
        store = MemoryCheckpointStore()
        first = await _debate(settings, store=store)
        calls = len(fake.requests)
        again = await _debate(settings, store=store)
    assert len(fake.requests) == calls
    assert again.verdict == first.verdict
    assert again.consensus and first.consensus and again.consensus.alpha == first.consensus.alpha


async def test_a_step_past_the_phase_deadline_is_degraded_and_marked() -> None:
    async with FakeOpenAI() as fake:
        fake.hang(lambda b: "Close:" in b["messages"][-1]["content"] and PRO in
                  b["messages"][0]["content"], 5.0)
        sink = MemoryEventSink()
        store = MemoryCheckpointStore()
        result = await _debate(gateway_settings(fake.base_url, phase_timeout=0.5),
                               store=store, sink=sink)
    assert result.status == "completed"
    assert not result.complete
    assert [d["key"] for d in result.degraded] == ["structured/closing/pro"]
    assert any("structured/closing/pro" in m for m in result.missing)
    assert result.routing in ("human_review", "escalate")
    kinds = [e.kind for e in sink.events]
    assert EventKind.STEP_DEGRADED in kinds
    assert "structured/closing/pro" not in store.keys("d1"), "degraded steps are never stored"
    closing = next(p for p in result.phases if p.name == "closing")
    assert closing.degraded == ["structured/closing/pro"]


async def test_the_whole_debate_deadline_ends_it_timed_out_with_what_it_had() -> None:
    async with FakeOpenAI(latency=0.3) as fake:
        result = await _debate(gateway_settings(fake.base_url, debate_timeout=0.75))
    assert result.status == "timed_out"
    assert not result.complete
    assert result.phases[0].name == "opening" and not result.phases[0].degraded
    assert any("timed_out" in m for m in result.missing)
    assert result.degraded, "steps that could not run are listed"


async def test_a_content_filtered_step_is_recorded_and_the_debate_goes_on() -> None:
    async with FakeOpenAI() as fake:
        fake.content_filter(lambda b: "opening" in b["messages"][-1]["content"] and CON in
                            b["messages"][0]["content"])
        store = MemoryCheckpointStore()
        result = await _debate(gateway_settings(fake.base_url), store=store)
        calls = len(fake.requests)
        await _debate(gateway_settings(fake.base_url), store=store)
        assert len(fake.requests) == calls, "a filtered step is stored and not paid again"
    assert result.status == "completed"
    assert result.filtered == ["structured/opening/con"]
    assert not result.complete and any("content filter" in m for m in result.missing)


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_fail_the_debate_at_once_naming_the_endpoint(status: int) -> None:
    async with FakeOpenAI() as fake:
        fake.fail("", status, times=100)
        result = await _debate(gateway_settings(fake.base_url))
        assert len(fake.requests) <= 2, "no retries, no further phases"
    assert result.status == "failed"
    assert fake.base_url in result.error and "OPENAI_API_KEY" in result.error
    assert TEST_API_KEY not in result.model_dump_json()


async def test_human_evidence_reaches_the_next_phase() -> None:
    evidence = MemoryEvidence()

    class AddEvidence(MemoryEventSink):
        """A person adds evidence while the openings are answered (both already sent)."""

        async def emit(self, event):  # type: ignore[no-untyped-def]
            await super().emit(event)
            if event.kind is EventKind.STEP_FINISHED and event.data["phase"] == "opening" \
                    and not any(e.kind is EventKind.STEP_FINISHED for e in self.events[:-1]):
                from engine.domain import Evidence
                evidence.add("d1", Evidence(author="U42", text="Our team has 3 engineers."))

    sink = AddEvidence()
    async with FakeOpenAI() as fake:
        result = await _debate(gateway_settings(fake.base_url), sink=sink, evidence=evidence)
    openings = [r for r in fake.requests if "Give your opening" in r.last_user]
    cross = [r for r in fake.requests if "Cross-examine" in r.last_user]
    assert openings and all("3 engineers" not in spotlit(r.last_user) for r in openings)
    assert cross and all("3 engineers" in spotlit(r.last_user) for r in cross)
    assert [e.text for e in result.evidence] == ["Our team has 3 engineers."]
    assert any(e.kind is EventKind.EVIDENCE_ADDED for e in sink.events)


async def test_events_tell_the_story_in_order() -> None:
    sink = MemoryEventSink()
    async with FakeOpenAI() as fake:
        await _debate(gateway_settings(fake.base_url), sink=sink)
    kinds = [e.kind for e in sink.events]
    assert kinds[0] is EventKind.DEBATE_STARTED and kinds[-1] is EventKind.DEBATE_FINISHED
    assert kinds.count(EventKind.PHASE_STARTED) == kinds.count(EventKind.PHASE_FINISHED) == 4
    assert kinds.count(EventKind.STEP_FINISHED) == 10
    assert kinds.count(EventKind.JUDGE_SCORED) == 4
    assert kinds.index(EventKind.CONSENSUS_COMPUTED) > max(
        i for i, k in enumerate(kinds) if k is EventKind.JUDGE_SCORED)


async def test_cost_comes_from_reported_usage_and_the_price_table() -> None:
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url)
        result = await _debate(settings)
        prompt = sum(r.usage["prompt_tokens"] for r in fake.requests)
        completion = sum(r.usage["completion_tokens"] for r in fake.requests)
        rate = settings.price_for(DEFAULT_MODEL)  # genai-prices' figures, cached input too
        expected = fake.bill_usd(input=rate.input, output=rate.output,
                                 cached_input=rate.cached_input)
    assert result.cost.prompt_tokens == prompt and result.cost.completion_tokens == completion
    assert rate.input > 0 and rate.output > 0 and rate.cached_input is not None
    assert result.cost.cached_tokens > 0 and result.cost.reasoning_tokens > 0
    assert result.cost.usd == pytest.approx(expected, abs=1e-6)
    (answered,) = result.cost.by_model   # the snapshot the API answered with
    assert answered.startswith(f"{DEFAULT_MODEL}-") and result.cost.by_model[answered][
        "calls"] == 10


async def test_judges_see_neutral_labels_in_varying_order() -> None:
    sink = MemoryEventSink()
    async with FakeOpenAI() as fake:
        result = await _debate(gateway_settings(fake.base_url), sink=sink)
        judges = [r for r in fake.requests if "impartial debate judge" in r.system]
    assert len(judges) == 4
    for r in judges:
        assert "Position A" in r.last_user and "Position B" in r.last_user
        assert "FOR (P)" not in r.last_user and "AGAINST (C)" not in r.last_user
    orders = {tuple(e.data["order"]) for e in sink.events if e.kind is EventKind.JUDGE_SCORED}
    assert orders == {("pro", "con"), ("con", "pro")}
    assert result.consensus is not None and len(result.consensus.judges) == 4


async def test_models_per_role_and_per_judge_are_used() -> None:
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url, models={"pro": "model-pro", "judge": "model-j"})
        await _debate(settings)
        models = {(r.role, r.body["model"]) for r in fake.requests}
        steps = {r.step for r in fake.requests}  # each call names its step (X-Dialectic-Step)
    assert {"structured/opening/pro", "structured/closing/con"} <= steps
    assert ("pro", "model-pro") in models
    assert ("con", DEFAULT_MODEL) in models
    assert ("judge/risk", "model-j") in models


@pytest.mark.parametrize(("fields", "message"), [
    ({"topic": "   "}, "empty"),
    ({"topic": "x" * 5000}, "limit"),
    ({"topic": "ok", "preset": "nope"}, "unknown preset"),
])
def test_bad_requests_are_refused_with_a_clear_message(fields: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidRequest, match=message):
        prepare(EngineSettings(rehearsal=True), DebateRequest(**fields))


@pytest.mark.parametrize("mode", ["simple", "structured", "consensus"])
async def test_rehearsal_says_so_everywhere(mode: str) -> None:
    settings = EngineSettings(rehearsal=True)
    sink = MemoryEventSink()
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode=mode))
    result = await run_debate(prepared, debate_id="r1", settings=settings, llm=RehearsalModel(),
                              store=MemoryCheckpointStore(), sink=sink)
    assert result.status == "completed" and result.rehearsal
    assert all(e.rehearsal for e in sink.events)
    assert "[rehearsal]" in result.rationale
    assert result.cost.usd == 0.0
    assert result.versions["rehearsal"] == "true"


async def test_a_judge_scoring_an_identical_transcript_is_served_from_the_cache() -> None:
    from engine.ports import MemoryStepCache

    cache = MemoryStepCache()
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url)
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="consensus"))
        llm = OpenAIGateway(settings)
        runs = []
        for store in (MemoryCheckpointStore(), MemoryCheckpointStore()):
            runs.append(await run_debate(prepared, debate_id="same-id", settings=settings,
                                         llm=llm, store=store, sink=MemoryEventSink(),
                                         step_cache=cache))
        await llm.aclose()
        judge_calls = [r for r in fake.requests if "impartial debate judge" in r.system]
    assert len(cache.items) == 4
    # the debaters ran twice (fake replies are deterministic, so the transcript is identical);
    # the four judges only once
    assert len(judge_calls) == 4
    first, second = runs
    assert second.cost.reused_calls == 4
    assert second.consensus and first.consensus
    assert second.consensus.alpha == first.consensus.alpha


async def test_when_no_call_succeeds_the_debate_fails_instead_of_completing() -> None:
    settings = gateway_settings("http://127.0.0.1:9/v1", max_retries=1)
    result = await _debate(settings, "simple", rounds=0)
    assert result.status == "failed" and not result.complete
    assert result.error.startswith("no model call succeeded")


@pytest.mark.parametrize("mode", ["simple", "structured", "consensus", "panel", "critique",
                                  "redteam"])
async def test_every_mode_runs_against_the_fake_server(mode: str) -> None:
    from engine.protocols import PROTOCOLS

    assert mode in PROTOCOLS
    sink = MemoryEventSink()
    async with FakeOpenAI() as fake:
        result = await _debate(gateway_settings(fake.base_url), mode, sink=sink)
        calls = len(fake.requests)
    assert result.status == "completed", result.error
    assert result.complete and not result.rehearsal
    assert result.cost.calls == calls > 0
    assert result.verdict
    assert sink.events[-1].kind is EventKind.DEBATE_FINISHED


async def test_calls_that_read_the_same_text_share_one_string() -> None:
    """A panel renders the transcript once per order, and both sides of a phase get one user
    turn: with 1,000 debates judging at once, a copy per call was a hundred megabytes
    (docs/benchmarks.md). The text each call sends is unchanged: rendered for it alone."""
    from engine.provider.llm import CallSpec, Reply

    specs: list[CallSpec] = []  # type: ignore[type-arg]

    class Recording(OpenAIGateway):
        async def complete(self, spec: CallSpec) -> Reply:  # type: ignore[type-arg, override]
            specs.append(spec)
            return await super().complete(spec)

    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url)
        result = await _debate(settings, llm=Recording(settings))
        sent = {r.last_user for r in fake.requests}
    assert result.status == "completed" and result.complete
    by_role: dict[str, list[CallSpec]] = {}  # type: ignore[type-arg]
    for spec in specs:
        by_role.setdefault(spec.step.rsplit("/", 1)[0], []).append(spec)
    judges = by_role["judge"]
    assert len(judges) == 4 and {j.prompt.user for j in judges} <= sent
    assert len({id(j.prompt.user) for j in judges}) == len({j.prompt.user for j in judges}) == 2
    for phase in ("structured/cross", "structured/closing"):
        pro, con = by_role[phase]
        assert pro.prompt.user is con.prompt.user and pro.prompt.user in sent
        assert pro.prompt.system != con.prompt.system


async def test_a_finished_debate_is_freed_without_the_collector() -> None:
    """A debate's context, records and replies go as soon as it ends, by reference counting:
    in a reference cycle they would wait for a full collection, which a long-running `serve`
    makes rarely (bot/service/memory.py), and each wave of debates would carry the last one's
    replies into its own peak."""
    async with FakeOpenAI() as fake:
        settings = gateway_settings(fake.base_url)
        await _debate(settings, debate_id="warm")   # the first debate's one-time loads
        gc.collect()
        gc.disable()
        try:
            result = await _debate(settings, debate_id="d2")
            left = [o for o in gc.get_objects() if isinstance(o, DebateContext)]
        finally:
            gc.enable()
    assert result.status == "completed" and result.complete
    assert left == []
