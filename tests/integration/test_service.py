"""The service over real databases: submit, run through workers, cache, budget, reviews."""

from __future__ import annotations

import asyncio

import pytest

from bot.service.reviews import AlreadyDecided, Decision, NotReviewer, ReviewDesk, Reviewers
from bot.service.worker import Worker
from bot.settings import Settings
from engine.domain import DebateRequest
from engine.errors import BudgetExceeded, InvalidRequest
from storage import audit, budget, reviews, steps
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin, ReviewStatus
from tests.support.service_fixtures import (
    priced,
    rehearsal_settings,
    running_worker,
    service,
    wait_done,
)

TOPIC = "Should we move billing to PostgreSQL?"
API = Origin(surface="api")


async def test_a_submitted_debate_runs_to_completion_settled_and_audited(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="structured"), origin=API)
    assert sub.record.status is DebateStatus.QUEUED and not sub.cached
    async with running_worker(svc):
        record = await wait_done(svc, sub.record.id)
    assert record.status is DebateStatus.COMPLETED
    assert record.result is not None and record.result.rehearsal
    assert record.started_at is not None and record.finished_at is not None
    async with db.transaction() as session:
        report = await audit.verify(session, record.id)
        events = await audit.events(session, record.id)
        state = await budget.state(session, record.created_at.date())
    assert report.ok
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["debate_created", "debate_submitted"]
    assert "claimed" in kinds and "debate_finished" in kinds
    assert state.reserved_usd == 0


async def test_a_worker_fills_its_free_slots_in_one_claim_and_runs_them_all(db: Database
                                                                            ) -> None:
    """Twelve queued debates, a worker with twelve slots: one claim takes them all (they share
    its clock reading), and every one completes with an intact audit chain."""
    svc = service(db, rehearsal_settings(daily_budget_usd=100.0))
    ids = [(await svc.submit(DebateRequest(topic=f"{TOPIC} ({i})", mode="simple"),
                             origin=API)).record.id for i in range(12)]
    async with running_worker(svc, concurrency=12):
        records = [await wait_done(svc, debate_id) for debate_id in ids]
    assert {r.status for r in records} == {DebateStatus.COMPLETED}
    async with db.transaction(readonly=True) as session:
        claimed_at = {e.at for debate_id in ids for e in await audit.events(session, debate_id)
                      if e.kind == "claimed"}
        assert (await audit.verify(session)).ok
    assert len(claimed_at) == 1


async def test_once_the_queue_is_empty_ending_debates_do_not_make_the_worker_ask_again(
        db: Database) -> None:
    """Ten debates, twenty slots, a long poll: the worker claims twice (ten, then none) and,
    while the ten end, asks the queue nothing more until its next poll."""
    svc = service(db, rehearsal_settings(poll_interval=30.0, daily_budget_usd=100.0))
    ids = [(await svc.submit(DebateRequest(topic=f"{TOPIC} [{i}]", mode="simple"),
                             origin=API)).record.id for i in range(10)]

    class Counting(Worker):
        claims = 0

        async def _claim(self, wanted: int) -> list[DebateRecord]:
            Counting.claims += 1
            return await super()._claim(wanted)

    stop = asyncio.Event()
    task = asyncio.create_task(Counting(svc, concurrency=20, grace=5.0).run(stop))
    try:
        records = [await wait_done(svc, debate_id) for debate_id in ids]
    finally:
        stop.set()
        await task
    assert {r.status for r in records} == {DebateStatus.COMPLETED}
    assert Counting.claims == 2


async def test_the_same_question_within_the_ttl_is_served_from_the_cache(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    first = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    async with running_worker(svc):
        await wait_done(svc, first.record.id)
    again = await svc.submit(DebateRequest(topic="  should we MOVE billing to postgresql ", mode=
                                           "simple"), origin=API)
    fresh = await svc.submit(DebateRequest(topic=TOPIC, mode="simple", no_cache=True), origin=API)
    assert again.cached and again.record.id == first.record.id
    assert not fresh.cached and fresh.record.id != first.record.id


async def test_an_idempotency_key_never_queues_twice(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    request = DebateRequest(topic=TOPIC, mode="simple", no_cache=True)
    a = await svc.submit(request, origin=API, idempotency_key="trigger-1")
    b = await svc.submit(request, origin=API, idempotency_key="trigger-1")
    assert b.duplicate and b.record.id == a.record.id
    assert len(await svc.recent()) == 1


async def test_over_budget_the_mode_is_downgraded_when_the_preset_allows(db: Database) -> None:
    svc = service(db, priced())
    consensus = await svc.estimate(DebateRequest(topic=TOPIC, mode="consensus"))
    structured = await svc.estimate(DebateRequest(topic=TOPIC, mode="structured"))
    # what is held is the high end of the estimate
    svc.settings = priced(daily_budget_usd=(consensus.usd_high + structured.usd_high) / 2).service
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="consensus"), origin=API)
    assert sub.downgraded_from == "consensus" and sub.record.mode == "structured"
    assert sub.record.downgraded_from == "consensus"


async def test_over_budget_without_downgrade_it_refuses_with_the_figures(db: Database) -> None:
    svc = service(db, priced(daily_budget_usd=0.001))
    with pytest.raises(BudgetExceeded) as caught:
        await svc.submit(DebateRequest(topic=TOPIC, preset="compliance"), origin=API)
    assert caught.value.estimate_usd > 0.001 and "$" in str(caught.value)
    assert await svc.recent() == []


async def test_bad_requests_change_nothing(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    for request in (DebateRequest(topic="x" * 20_000), DebateRequest(topic="ok", preset="nope")):
        with pytest.raises(InvalidRequest):
            await svc.submit(request, origin=API)
    assert await svc.recent() == []


@pytest.mark.postgres
async def test_concurrent_submissions_never_spend_more_than_the_cap(pg_db: Database) -> None:
    svc = service(pg_db, priced())
    # the longest topic: an estimate counts the topic in every prompt
    one = await svc.estimate(DebateRequest(topic=f"{TOPIC} #99", preset="compliance"))
    svc.settings = priced(daily_budget_usd=one.usd_high * 10).service  # ten holds

    async def submit(i: int) -> str:
        try:
            request = DebateRequest(topic=f"{TOPIC} #{i}", preset="compliance")
            return (await svc.submit(request, origin=API)).record.id
        except BudgetExceeded:
            return "refused"

    outcomes = await asyncio.gather(*(submit(i) for i in range(100)))
    accepted = [o for o in outcomes if o != "refused"]
    assert len(accepted) == 10
    async with pg_db.transaction() as session:
        state = await budget.state(session, (await svc.get(accepted[0])).created_at.date())
    assert state.reserved_usd <= svc.settings.daily_budget_usd + 1e-9


async def test_a_routed_result_awaits_review_and_is_decided_once(db: Database) -> None:
    # thresholds no panel can reach: every consensus result is routed to a human
    from engine.settings import PresetSpec, ThresholdSpec

    strict = PresetSpec(name="strict", mode="consensus",
                        thresholds=ThresholdSpec(high=1.0, tentative=1.0, escalate=0.0))
    svc = service(db, rehearsal_settings(presets={"strict": strict}))
    sub = await svc.submit(DebateRequest(topic=TOPIC, preset="strict"), origin=API)
    async with running_worker(svc):
        record = await wait_done(svc, sub.record.id)
    assert record.status is DebateStatus.AWAITING_REVIEW
    async with db.transaction() as session:
        review = await reviews.get_by_debate(session, record.id)
    assert review is not None and review.status is ReviewStatus.PENDING
    desk = ReviewDesk(svc, Reviewers(["UREVIEWER", "UOTHER"]))
    outcomes = await asyncio.gather(
        desk.decide(review.id, ReviewStatus.APPROVED, by="UREVIEWER"),
        desk.decide(review.id, ReviewStatus.ESCALATED, by="UOTHER", note="no"),
        return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, Decision)]
    losers = [o for o in outcomes if isinstance(o, AlreadyDecided)]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0].review.status is winners[0].review.status
    final = await svc.get(record.id)
    assert final.status in (DebateStatus.APPROVED, DebateStatus.ESCALATED)
    with pytest.raises(NotReviewer):
        await desk.decide(review.id, ReviewStatus.APPROVED, by="UMALLORY")
    async with db.transaction() as session:
        kinds = [e.kind for e in await audit.events(session, record.id)]
    assert kinds.count("review_decided") == 1 and kinds.count("review_refused") == 1


async def test_escalating_needs_a_reason_and_a_rerun_links_the_new_debate(db: Database) -> None:
    from engine.settings import PresetSpec, ThresholdSpec

    strict = PresetSpec(name="strict", mode="consensus",
                        thresholds=ThresholdSpec(high=1.0, tentative=1.0, escalate=0.0))
    svc = service(db, rehearsal_settings(presets={"strict": strict}))
    desk = ReviewDesk(svc, Reviewers(["UREVIEWER"]))
    sub = await svc.submit(DebateRequest(topic=TOPIC, preset="strict"), origin=API)
    async with running_worker(svc):
        record = await wait_done(svc, sub.record.id)
    (review,) = await desk.pending()
    with pytest.raises(InvalidRequest, match="say why"):
        await desk.decide(review.id, ReviewStatus.ESCALATED, by="UREVIEWER", note="  ")
    decision = await desk.decide(review.id, ReviewStatus.RERUN, by="UREVIEWER")
    first = await desk.rerun(decision, origin=API)
    again = await desk.rerun(decision, origin=API)
    assert first.record.parent_id == record.id and again.record.id == first.record.id
    assert first.record.request.topic == record.request.topic
    assert first.record.requested_by == "UREVIEWER"


async def test_a_failed_debate_can_be_retried_and_reuses_its_steps(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    with pytest.raises(InvalidRequest, match="only failed"):
        await svc.retry(sub.record.id, actor="api")


async def _stored_steps(db: Database, debate_id: str) -> list[str]:
    async with db.transaction(readonly=True) as session:
        return [s.key for s in await steps.list_steps(session, debate_id)]


async def test_a_worker_shutting_down_releases_its_debate_for_another(db: Database) -> None:
    slow = rehearsal_settings()
    svc = service(db, slow)

    from engine.provider.rehearsal import RehearsalModel

    svc.llm_factory = lambda settings: RehearsalModel(latency=0.3)
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="structured"), origin=API)
    async with running_worker(svc, worker_id="first") as worker:
        worker.grace = 0.0
        async with asyncio.timeout(30):   # until the openings are stored
            while len(await _stored_steps(db, sub.record.id)) < 2:
                await asyncio.sleep(0.05)
    released = await svc.get(sub.record.id)
    assert released.status is DebateStatus.QUEUED and released.lease_owner is None
    async with running_worker(svc, worker_id="second"):
        record = await wait_done(svc, sub.record.id)
    assert record.status is DebateStatus.COMPLETED
    assert record.result is not None and record.result.cost.reused_calls >= 2


@pytest.mark.parametrize(("mode", "change"), [
    ("panel", {"synthesizer": "gpt-4o"}),
    ("simple", {"more_rounds": 1}),
    ("critique", {"synthesizer": "gpt-4.1"}),
])
async def test_replay_reuses_unchanged_steps_and_never_touches_the_source(
        db: Database, mode: str, change: dict) -> None:  # type: ignore[type-arg]
    svc = service(db, rehearsal_settings())
    source = await svc.submit(DebateRequest(topic=TOPIC, mode=mode), origin=API)
    async with running_worker(svc):
        before = await wait_done(svc, source.record.id)
        replay = await svc.replay(source.record.id, **change)
        after = await wait_done(svc, replay.record.id)
    assert after.parent_id == source.record.id
    assert after.result is not None and after.result.cost.reused_calls >= 2
    untouched = await svc.get(source.record.id)
    assert untouched.result == before.result and untouched.status == before.status
    if "more_rounds" in change:
        assert after.request.rounds == (before.request.rounds or 0) + 1
        assert any(p.name == "rebuttal 2" for p in after.result.phases)
    async with db.transaction() as session:
        assert (await audit.verify(session)).ok


async def test_replay_needs_a_change_and_a_finished_source(db: Database) -> None:
    svc = service(db, rehearsal_settings())
    source = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    with pytest.raises(InvalidRequest, match="no result yet"):
        await svc.replay(source.record.id, more_rounds=1)
    async with running_worker(svc):
        await wait_done(svc, source.record.id)
    with pytest.raises(InvalidRequest, match="say what to change"):
        await svc.replay(source.record.id)
    with pytest.raises(InvalidRequest, match="'gpt-imaginary' whose price is unknown"):
        await svc.replay(source.record.id, synthesizer="gpt-imaginary")


async def test_a_debate_that_keeps_dying_fails_after_the_attempt_limit(db: Database) -> None:
    from datetime import timedelta

    from storage import queue

    svc = service(db, rehearsal_settings(max_attempts=2))
    await svc.submit(DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    now = svc.clock()
    for n in range(3):   # three workers claim it and die without a trace
        async with db.transaction() as session:
            claimed = await queue.claim(session, worker_id=f"w{n}", lease_seconds=1,
                                        now=now + timedelta(seconds=10 * n))
        assert claimed is not None and claimed.attempts == n + 1
    record = await svc.execute(claimed, worker_id="w2")
    assert record.status is DebateStatus.FAILED
    assert "gave up after 2 interrupted attempts" in record.error
    retried = await svc.retry(record.id, actor="operator")
    assert retried.status is DebateStatus.QUEUED and retried.attempts == 0
    async with running_worker(svc):
        done = await wait_done(svc, record.id)
    assert done.status is DebateStatus.COMPLETED


async def test_estimates_learn_from_the_tokens_recent_debates_used(db: Database) -> None:
    from bot.service import calibration
    from tests.fakes.fixtures import gateway_settings
    from tests.fakes.openai_server import FakeOpenAI

    request = DebateRequest(topic=TOPIC, mode="simple", no_cache=True)
    async with FakeOpenAI(replies="minimal") as fake:   # replies shorter than the prior's
        svc = service(db, Settings(**gateway_settings(fake.base_url).model_dump()))
        cold = await svc.estimate(request)
        async with running_worker(svc):
            for i in range(3):
                sub = await svc.submit(request.model_copy(update={"topic": f"{TOPIC} {i}"}),
                                       origin=API)
                await wait_done(svc, sub.record.id)
        svc.history.forget()
        warm = await svc.estimate(request)
        done = [r for r in await svc.recent() if r.result is not None]
        await svc.aclose()
    assert len(done) == 3
    # the fake's replies are short: the learned range moves down, and still holds what each
    # debate really cost (rehearsals teach nothing: their replies are no provider's)
    assert warm.completion_tokens < cold.completion_tokens
    assert warm.usd != cold.usd
    assert all(r.cost_usd <= warm.usd_high for r in done)
    assert calibration.TTL_SECONDS > 0


async def test_judges_are_calibrated_against_their_recent_scores(db: Database) -> None:
    from tests.fakes.fixtures import gateway_settings
    from tests.fakes.openai_server import FakeOpenAI

    async with FakeOpenAI() as fake:
        svc = service(db, Settings(**gateway_settings(fake.base_url).model_dump()))
        assert await svc.history.judge_scores() == {}
        sub = await svc.submit(DebateRequest(topic=TOPIC), origin=API)
        async with running_worker(svc):
            record = await wait_done(svc, sub.record.id)
        svc.history.forget()   # computed at most once a minute; look again now
        history = await svc.history.judge_scores()
        await svc.aclose()
    assert set(history) == {"technical", "business", "risk", "general"}
    assert record.result is not None and record.result.consensus is not None
    row = record.result.consensus.ratings["risk"]
    assert history["risk"] == [v for v in row if v is not None]


@pytest.mark.parametrize(("mode", "reads"), [("simple", 0), ("critique", 0), ("consensus", 1)])
async def test_only_a_mode_with_panel_statistics_reads_the_judges_history(
        db: Database, mode: str, reads: int) -> None:
    """The judges' history (the last 50 debates read whole) calibrates a panel's statistics
    alone: a debate of another mode never reads it, so its start does not grow with history."""
    from tests.fakes.fixtures import gateway_settings
    from tests.fakes.openai_server import FakeOpenAI

    async with FakeOpenAI() as fake:
        svc = service(db, Settings(**gateway_settings(fake.base_url).model_dump()))
        read = svc.history._read_judge_scores
        calls: list[int] = []

        async def counted(debates_back: int) -> dict[str, list[float]]:
            calls.append(debates_back)
            return await read(debates_back)

        svc.history._read_judge_scores = counted  # type: ignore[method-assign]
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode=mode), origin=API)
        async with running_worker(svc):
            record = await wait_done(svc, sub.record.id)
        await svc.aclose()
    assert record.result is not None and record.result.status == "completed"
    assert len(calls) == reads
