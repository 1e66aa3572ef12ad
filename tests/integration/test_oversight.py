"""Routing that learns from the reviewers, through the real storage (SQLite and PostgreSQL): the
judge audit finds exactly the biases planted in a settled history, decisions are labels (and a
decision about the run is not), the spot-check sampler holds its rate, the suggester recovers a
known cut-off, applied thresholds route new debates, evidence weights are bounded and recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.service.runtime import Runtime
from bot.settings import Settings
from engine.core.presets import BUILTIN_PRESETS
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.oversight.inference import poisson_binomial_test, wilson_interval
from engine.oversight.panel_records import JudgeVerdict, PanelRecord, ReviewLabel
from engine.oversight.routing_audit import spot_check
from engine.oversight.thresholds import SuggestionPolicy
from engine.protocols.judging import judge_order
from engine.provider.profiles import undated
from engine.settings import ThresholdSpec
from engine.untrusted.injection import Finding, FindingKind
from engine.vocabulary import Routing
from storage import audit, debates, panels, reviews
from storage.db import Database
from storage.records import DebateStatus, DecisionAbout, Origin, ReviewStatus
from tests.fakes.fixtures import DEFAULT_MODEL, gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.audit_fixtures import START, SyntheticJudge, history
from tests.support.oversight_fixtures import (
    GOLDEN,
    REVIEWER,
    Clock,
    add_running,
    decided_history,
    judged_result,
    panel_of_two,
    settle_history,
)
from tests.support.service_fixtures import rehearsal_settings, running_worker, runtime, wait_done
from tests.support.storage_fixtures import make_record

MIXED = [SyntheticJudge(name="fair-a"), SyntheticJudge(name="first", habit="first"),
         SyntheticJudge(name="verbose", habit="verbose"),
         SyntheticJudge(name="harsh", habit="harsh"), SyntheticJudge(name="fair-b")]
EXPECTED_FLAGS = {"fair-a": (), "fair-b": (), "first": ("position_bias",),
                  "verbose": ("verbosity_bias",), "harsh": ("leniency",)}
API = Origin(surface="api")


def _runtime(db: Database, clock: Clock, **overrides: object) -> Runtime:
    values: dict[str, object] = {"reviewers": REVIEWER, "spot_check_fraction": 0.0}
    values.update(overrides)
    rt = runtime(db, rehearsal_settings(**values))
    rt.service.clock = clock
    return rt


async def test_the_judge_report_finds_exactly_the_planted_biases(db: Database) -> None:
    planted = history(MIXED, seed=11)
    clock = Clock(START)
    rt = _runtime(db, clock)
    await settle_history(rt.reviews, clock, planted)
    clock.now = planted[-1].finished_at + timedelta(days=1)

    report = await rt.service.oversight.judge_report()

    assert {a.judge: a.flags for a in report.judges} == EXPECTED_FLAGS
    assert report.debates == len(planted)
    assert report.labelled == sum(p.review is not None for p in planted)
    first = next(a for a in report.judges if a.judge == "first")
    assert first.model == "gpt-4o-mini" and first.position_bias.estimate == 1.0
    assert first.reviewer_agreement.status == "ok" and first.reviewer_agreement.n >= 20


async def test_stored_panels_are_the_settled_ones_with_their_labels(db: Database) -> None:
    planted = history(MIXED, seed=12, debates=40)
    clock = Clock(START)
    rt = _runtime(db, clock)
    await settle_history(rt.reviews, clock, planted)
    async with db.transaction(readonly=True) as session:
        stored = await panels.history(session, since=START - timedelta(days=1))
    assert [s.panel.debate_id for s in stored] == [p.debate_id for p in planted]
    for got, want in zip(stored, planted, strict=True):
        assert got.panel.review == want.review
        assert got.panel.lengths == want.lengths and got.panel.finished_at == want.finished_at
        assert got.panel.panel_winner == want.panel_winner
        by_judge = {v.judge: v for v in got.panel.verdicts}
        for verdict in want.verdicts:
            mine = by_judge[verdict.judge]
            assert (mine.shown_first, mine.winner, mine.model) == (
                verdict.shown_first, verdict.winner, verdict.model)
            assert mine.scores == pytest.approx(verdict.scores)
        assert got.outcome is not None
        assert got.outcome.routing is (Routing.HUMAN_REVIEW if want.review else
                                       Routing.AUTO_APPROVE)


async def test_a_debate_settled_again_keeps_one_panel_with_the_newer_figures(db: Database
                                                                            ) -> None:
    """A retried debate settles anew: its panel row is replaced (one statement, an upsert), not
    doubled."""
    async with db.transaction() as session:
        await debates.create(session, topic_key="r1",
                             record=make_record(id="r1", preset="decision", created_at=START))
        for alpha, routing, hours in ((0.5, Routing.HUMAN_REVIEW, 1),
                                      (0.9, Routing.AUTO_APPROVE, 2)):
            assert await panels.record(
                session, result=judged_result(panel_of_two("r1", 0), alpha=alpha,
                                              routing=routing),
                finished_at=START + timedelta(hours=hours), spot_check=False, fraction=0.05)
    async with db.transaction(readonly=True) as session:
        [stored] = await panels.history(session, since=START - timedelta(days=1))
    assert stored.panel.finished_at == START + timedelta(hours=2)
    assert stored.outcome is not None and stored.outcome.routing is Routing.AUTO_APPROVE
    assert stored.outcome.alpha == pytest.approx(0.9)


@pytest.mark.parametrize(("decision", "about", "label"), [
    (ReviewStatus.APPROVED, None, "approved"),
    (ReviewStatus.ESCALATED, None, "escalated"),
    (ReviewStatus.RERUN, None, "rerun"),
    (ReviewStatus.RERUN, DecisionAbout.PROCESS, None),
    (ReviewStatus.ESCALATED, DecisionAbout.PROCESS, None),
])
async def test_a_decision_is_a_label_unless_it_is_about_the_run(
        db: Database, decision: ReviewStatus, about: DecisionAbout | None,
        label: ReviewLabel | None) -> None:
    clock = Clock(START)
    rt = _runtime(db, clock)
    result = judged_result(panel_of_two("d1", 0), alpha=0.6, routing=Routing.HUMAN_REVIEW)
    await add_running(rt.service, "d1", "decision", START)
    await rt.service.finish("d1", result, actor="w")
    review = await rt.reviews.for_debate("d1")
    assert review is not None and not review.spot_check
    decided = await rt.reviews.decide(review.id, decision, by=REVIEWER, note="why",
                                      about=about, winner="con")
    assert decided.review.about is (about or DecisionAbout.VERDICT)
    async with db.transaction(readonly=True) as session:
        [stored] = await panels.history(session, since=START - timedelta(days=1))
        chain = await audit.events(session, "d1")
    assert stored.panel.review == label
    assert stored.panel.human_winner == ("con" if label else None)
    decided_event = next(e for e in chain if e.kind == "review_decided")
    assert decided_event.data["about"] == (about or DecisionAbout.VERDICT).value


async def test_sending_back_an_incomplete_result_is_about_the_run_by_default(
        db: Database) -> None:
    clock = Clock(START)
    rt = _runtime(db, clock)
    result = judged_result(panel_of_two("d2", 0), alpha=0.9, routing=Routing.HUMAN_REVIEW,
                           complete=False)
    await add_running(rt.service, "d2", "decision", START)
    await rt.service.finish("d2", result, actor="w")
    review = await rt.reviews.for_debate("d2")
    assert review is not None
    decided = await rt.reviews.decide(review.id, ReviewStatus.RERUN, by=REVIEWER)
    assert decided.review.about is DecisionAbout.PROCESS
    async with db.transaction(readonly=True) as session:
        [stored] = await panels.history(session, since=START - timedelta(days=1))
    assert stored.panel.review is None
    assert stored.outcome is None   # routed for its gaps: says nothing of the cut-offs


async def test_a_flagged_result_is_neither_spot_checked_nor_kept_for_the_audits(
        db: Database) -> None:
    """Text addressed to the AI sends a result to a person whatever its alpha; its judging and
    routing may have been steered, so it teaches the audits nothing."""
    clock = Clock(START)
    rt = _runtime(db, clock, spot_check_fraction=1.0)
    finding = Finding(kind=FindingKind.JUDGE_DIRECTIVE, rule="score-directive",
                      reason="tells the judges how to score", start=0, end=10,
                      excerpt="score B 10", source="context")
    result = judged_result(panel_of_two("f1", 0), alpha=0.95, routing=Routing.AUTO_APPROVE)
    await add_running(rt.service, "f1", "decision", START)
    record = await rt.service.finish("f1", result.model_copy(update={"injection": [finding]}),
                                     actor="w")
    review = await rt.reviews.for_debate("f1")
    assert record.status is DebateStatus.AWAITING_REVIEW
    assert review is not None and not review.spot_check
    async with db.transaction(readonly=True) as session:
        assert await panels.history(session, since=START - timedelta(days=1)) == []


async def test_the_spot_check_rate_holds_within_its_binomial_interval(db: Database) -> None:
    fraction, n = 0.1, 300
    clock = Clock(START)
    rt = _runtime(db, clock, spot_check_fraction=fraction)
    ids = [f"spot-{i:04d}" for i in range(n)]
    for i, debate_id in enumerate(ids):
        clock.now = START + timedelta(minutes=i)
        routing = Routing.AUTO_APPROVE if i % 3 else Routing.TENTATIVE
        await add_running(rt.service, debate_id, "decision", clock.now)
        await rt.service.finish(debate_id, judged_result(panel_of_two(debate_id, i), alpha=0.85,
                                                         routing=routing), actor="w")
    async with db.transaction(readonly=True) as session:
        sampled = [r for r in await reviews.list_pending(session, limit=n) if r.spot_check]
        statuses = {(await debates.get(session, r.debate_id)).status for r in sampled}
    drawn = {r.debate_id for r in sampled}
    assert drawn == {d for d in ids if spot_check(d, fraction)}   # the sampler, nothing else
    low, high = wilson_interval(len(drawn), n, 0.999)
    assert low <= fraction <= high
    assert poisson_binomial_test(len(drawn), [fraction] * n) > 0.001
    assert statuses == {DebateStatus.COMPLETED}       # published all the same
    assert all("spot check" in r.reason for r in sampled)

    upheld, overturned = sampled[0], sampled[1]
    await rt.reviews.decide(upheld.id, ReviewStatus.APPROVED, by=REVIEWER)
    decision = await rt.reviews.decide(overturned.id, ReviewStatus.ESCALATED, by=REVIEWER,
                                       note="the verdict is wrong")
    assert decision.record.status is DebateStatus.ESCALATED
    clock.now = START + timedelta(days=1)
    report = await rt.service.oversight.routing_report(min_n=1)
    [decision_routing] = [p for p in report.presets if p.routing.preset == "decision"]
    figure = decision_routing.routing.overturned["published"]
    assert (figure.n, figure.detail["count"]) == (2, 1)
    assert decision_routing.routing.pending == len(drawn) - 2


async def test_the_suggester_recovers_a_known_cut_off_from_stored_decisions(
        db: Database) -> None:
    clock = Clock(START)
    rt = _runtime(db, clock)
    clock.now = await decided_history(rt.service.db, results=600, fraction=1.0)
    policy = SuggestionPolicy(target=0.95, tentative_target=0.95, criterion="point")
    found = await rt.service.oversight.suggest("decision", policy=policy, days=30)
    assert found.suggestion.status == "ok" and found.suggestion.suggested is not None
    chosen = found.suggestion.suggested.thresholds
    # the lowest cut on the 0.01 grid at or above the true 0.6752; where overturns pass half
    assert 0.6752 <= chosen.tentative <= 0.6752 + policy.step
    assert chosen.high == chosen.tentative and chosen.escalate == pytest.approx(0.45)
    assert found.in_force.source == "preset"
    upheld = found.suggestion.suggested.published_upheld
    assert upheld.estimate is not None and upheld.estimate >= 0.95
    assert found.suggestion.current.thresholds == ThresholdSpec()   # compared with the preset's


def _gateway(base_url: str, **overrides: object) -> Settings:
    values = {**gateway_settings(base_url).model_dump(), "reviewers": REVIEWER,
              "spot_check_fraction": 0.0, **overrides}
    return Settings(**values)


async def test_applied_thresholds_route_new_debates_and_are_audited(db: Database) -> None:
    async with FakeOpenAI() as fake:
        rt = runtime(db, _gateway(fake.base_url))
        oversight = rt.service.oversight
        assert (await oversight.in_force_for("decision")).source == "preset"
        strict = ThresholdSpec(high=1.0, tentative=1.0, escalate=1.0)
        await oversight.apply("decision", strict, by="ops@example.com",
                              note="nothing publishes while we measure",
                              evidence={"suggested": "by hand"})
        in_force = await oversight.in_force_for("decision")
        assert in_force.source == "applied" and in_force.thresholds == strict
        assert in_force.applied is not None and in_force.applied.applied_by == "ops@example.com"
        sub = await rt.service.submit(DebateRequest(topic="Adopt PostgreSQL?",
                                                    preset="decision"), origin=API)
        async with running_worker(rt.service):
            record = await wait_done(rt.service, sub.record.id)
        await oversight.apply("decision", None, by="ops@example.com", note="back to normal")
        back = await oversight.in_force_for("decision")
        async with db.transaction(readonly=True) as session:
            applied = [e for e in await audit.events(session, None)
                       if e.kind == "thresholds_applied"]
        await rt.service.aclose()
    c = record.result.consensus if record.result else None
    assert c is not None and c.alpha is not None and c.thresholds == strict
    assert (c.band, record.result.routing if record.result else None) == ("contentious",
                                                                          "escalate")
    assert record.status is DebateStatus.AWAITING_REVIEW
    assert back.source == "preset" and back.thresholds == back.preset_thresholds
    assert [e.data["thresholds"] for e in applied] == [strict.model_dump(mode="json"), None]
    assert applied[0].actor == "ops@example.com"
    assert applied[0].data["note"] == "nothing publishes while we measure"


async def test_an_unknown_preset_or_nobody_cannot_apply(db: Database) -> None:
    rt = _runtime(db, Clock(START))
    with pytest.raises(InvalidRequest, match="unknown preset"):
        await rt.service.oversight.apply("nope", ThresholdSpec(), by="ops")
    with pytest.raises(InvalidRequest, match="say who applies"):
        await rt.service.oversight.apply("decision", ThresholdSpec(), by=" ", note="why")
    for blank in ("", "\u200b", " \ufeff\u2060\n"):
        with pytest.raises(InvalidRequest, match="say why you apply these thresholds"):
            await rt.service.oversight.apply("decision", ThresholdSpec(), by="ops", note=blank)
    assert (await rt.service.oversight.in_force_for("decision")).source == "preset"


def _agreeing(judges: dict[str, float], debates: int) -> list[PanelRecord]:
    """Labelled debates where each judge names the reviewer's side at its own rate (a
    low-discrepancy sequence per judge); the panel's winner is always "pro", approved."""
    panels_ = []
    for d in range(debates):
        verdicts = tuple(JudgeVerdict(
            judge=name, model=DEFAULT_MODEL, shown_first=judge_order(f"w-{d}", j)[0].value,
            winner="pro" if ((d + 1) * GOLDEN + j / 7) % 1.0 < rate else "con",
            scores={"pro": 7.0, "con": 5.0}) for j, (name, rate) in enumerate(judges.items()))
        panels_.append(PanelRecord(debate_id=f"w-{d}", finished_at=START + timedelta(hours=d),
                                   lengths={"pro": 1000, "con": 1000}, verdicts=verdicts,
                                   panel_winner="pro", review="approved", preset="decision"))
    return panels_


async def test_evidence_weights_are_bounded_and_recorded_in_the_result(db: Database) -> None:
    decision = BUILTIN_PRESETS["decision"].model_copy(update={"evidence_weights": True})
    clock = Clock(START)
    async with FakeOpenAI() as fake:
        rt = runtime(db, _gateway(fake.base_url, presets={"decision": decision}))
        rt.service.clock = clock
        await settle_history(rt.reviews, clock, _agreeing(
            {"technical": 0.95, "business": 0.75, "general": 0.45}, 80))
        clock.now = START + timedelta(days=5)
        sub = await rt.service.submit(DebateRequest(topic="Adopt PostgreSQL?",
                                                    preset="decision"), origin=API)
        async with running_worker(rt.service):
            record = await wait_done(rt.service, sub.record.id)
        async with db.transaction(readonly=True) as session:
            chain = await audit.events(session, record.id)
        await rt.service.aclose()
    assert record.result is not None and record.result.consensus is not None
    weights = record.result.consensus.weights
    assert weights["technical"] > weights["business"] > weights["general"]
    assert max(weights.values()) / sum(weights.values()) <= 0.5 + 1e-9
    assert all(0.5 - 1e-9 <= w <= 2.0 + 1e-9 for w in weights.values())   # factor bounds
    reasons = next(e for e in chain if e.kind == "judge_weights").data
    assert set(reasons) == set(weights)
    assert reasons["technical"]["weight"] == pytest.approx(weights["technical"])
    assert "agreed with reviewers" in reasons["technical"]["reason"]


async def test_without_the_opt_in_weights_stay_configured(db: Database) -> None:
    clock = Clock(START)
    async with FakeOpenAI() as fake:
        rt = runtime(db, _gateway(fake.base_url))
        rt.service.clock = clock
        await settle_history(rt.reviews, clock, _agreeing(
            {"technical": 0.95, "business": 0.75, "general": 0.45}, 40))
        clock.now = START + timedelta(days=3)
        sub = await rt.service.submit(DebateRequest(topic="Adopt PostgreSQL?",
                                                    preset="decision"), origin=API)
        async with running_worker(rt.service):
            record = await wait_done(rt.service, sub.record.id)
        await rt.service.aclose()
    assert record.result is not None and record.result.consensus is not None
    assert set(record.result.consensus.weights.values()) == {1.0}


async def test_a_run_records_what_the_judge_audit_reads(db: Database) -> None:
    """Through the real protocol and gateway: each judge's Position A is the order the judge
    saw, its winner and model are kept, each side's length is counted, and the panel row is
    written; a rehearsal result is left out."""
    async with FakeOpenAI() as fake:
        rt = runtime(db, _gateway(fake.base_url))
        sub = await rt.service.submit(DebateRequest(topic="Adopt PostgreSQL?",
                                                    preset="decision"), origin=API)
        async with running_worker(rt.service):
            record = await wait_done(rt.service, sub.record.id)
        await rt.service.aclose()
    assert record.result is not None and record.result.consensus is not None
    c = record.result.consensus
    judges = [j.name for j in BUILTIN_PRESETS["decision"].judges]
    assert c.shown_first == {name: judge_order(record.id, i)[0] for i, name in enumerate(judges)}
    assert set(c.winners) == set(judges)
    assert {undated(m) for m in c.models.values()} == {DEFAULT_MODEL}  # the snapshot answered
    assert c.lengths["pro"] > 100 and c.lengths["con"] > 100
    async with db.transaction(readonly=True) as session:
        [stored] = await panels.history(session, since=record.created_at - timedelta(days=1))
    assert stored.panel.debate_id == record.id
    assert {v.judge: v.shown_first for v in stored.panel.verdicts} == c.shown_first

    rehearsed = runtime(db, rehearsal_settings())
    sub = await rehearsed.service.submit(DebateRequest(topic="Adopt MySQL?", preset="decision"),
                                         origin=API)
    async with running_worker(rehearsed.service):
        await wait_done(rehearsed.service, sub.record.id)
    async with db.transaction(readonly=True) as session:
        assert len(await panels.history(session, since=record.created_at - timedelta(days=1))
                   ) == 1
