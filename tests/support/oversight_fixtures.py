"""Judged histories written through the real storage: each synthetic debate
(tests/support/audit_fixtures) becomes a consensus result settled by `DebateService.finish()`
(which keeps the judged debate and creates the review routing asks for), and each reviewer's
label a decision at the `ReviewDesk`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from bot.service.debates import DebateService
from bot.service.reviews import ReviewDesk
from engine.domain import ConsensusSummary, DebateRequest, DebateResult
from engine.oversight.panel_records import JudgeVerdict, PanelRecord, ReviewLabel
from engine.oversight.routing_audit import spot_check
from engine.reading.verdicts import band_for, route
from engine.settings import ThresholdSpec
from engine.vocabulary import ROUTED_TO_HUMANS, Mode, ResultStatus, Routing, Side
from storage import debates, panels, reviews
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin, ReviewStatus
from tests.support.audit_fixtures import START
from tests.support.storage_fixtures import make_record

__all__ = ["DECISIONS", "GOLDEN", "REVIEWER", "Clock", "add_running", "decided_history",
           "ending_now", "judged_result", "panel_of_two", "settle_history", "upheld_share"]

REVIEWER = "U0REVIEWER"
DECISIONS: dict[ReviewLabel, ReviewStatus] = {"approved": ReviewStatus.APPROVED,
                                              "escalated": ReviewStatus.ESCALATED,
                                              "rerun": ReviewStatus.RERUN}


class Clock:
    """A settable clock for the service: the history is written at its own times."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def judged_result(panel: PanelRecord, *, alpha: float, routing: Routing,
                  thresholds: ThresholdSpec | None = None, irreconcilable: bool = False,
                  complete: bool = True) -> DebateResult:
    """A consensus result whose panel is `panel`: each judge's raw rubric means as its row."""
    items = ["pro.logic", "con.logic"]
    verdicts = panel.verdicts
    consensus = ConsensusSummary(
        alpha=alpha, band=band_for(alpha, thresholds or ThresholdSpec()), routing=routing,
        irreconcilable=irreconcilable, judges=sorted(v.judge for v in verdicts), items=items,
        ratings={v.judge: [v.scores.get("pro"), v.scores.get("con")] for v in verdicts},
        winners={v.judge: None if v.winner is None else Side(v.winner) for v in verdicts},
        shown_first={v.judge: Side(v.shown_first) for v in verdicts},
        models={v.judge: v.model for v in verdicts},
        weights={v.judge: 1.0 for v in verdicts}, lengths=dict(panel.lengths),
        thresholds=thresholds or ThresholdSpec())
    return DebateResult(
        id=panel.debate_id, status=ResultStatus.COMPLETED, mode=Mode.CONSENSUS,
        topic=f"Synthetic debate {panel.debate_id}", preset=panel.preset or "decision",
        verdict="synthetic", winner=None if panel.panel_winner is None else Side(
            panel.panel_winner), consensus=consensus, routing=routing, complete=complete,
        missing=[] if complete else ["judge risk: degraded"])


async def add_running(service: DebateService, debate_id: str, preset: str, at: datetime
                      ) -> DebateRecord:
    """A debate row as a worker holds it while it runs (status debating)."""
    record = DebateRecord(
        id=debate_id, request=DebateRequest(topic=f"Synthetic debate {debate_id}",
                                            mode=Mode.CONSENSUS, preset=preset),
        mode="consensus", preset=preset, status=DebateStatus.DEBATING,
        origin=Origin(surface="api"), created_at=at, updated_at=at, started_at=at)
    async with service.db.transaction() as session:
        return await debates.create(session, record=record, topic_key=debate_id)


async def settle_history(desk: ReviewDesk, clock: Clock, history: Sequence[PanelRecord]) -> None:
    """Settle every debate of `history` through the service at its own time; those a reviewer
    labelled are routed to review (alpha 0.55) and decided at the desk, the rest published
    (alpha 0.9)."""
    service = desk.service
    for panel in history:
        clock.now = panel.finished_at
        labelled = panel.review is not None
        routing = Routing.HUMAN_REVIEW if labelled else Routing.AUTO_APPROVE
        result = judged_result(panel, alpha=0.55 if labelled else 0.9, routing=routing)
        await add_running(service, panel.debate_id, result.preset or "decision",
                          panel.finished_at - timedelta(minutes=5))
        await service.finish(panel.debate_id, result, actor="worker-test")
        if panel.review is not None:
            review = await desk.for_debate(panel.debate_id)
            assert review is not None
            clock.now = panel.finished_at + timedelta(minutes=10)
            await desk.decide(review.id, DECISIONS[panel.review], by=REVIEWER,
                              note="the panel named the weaker side"
                              if panel.review != "approved" else "", surface="cli",
                              winner=panel.human_winner)




def ending_now(history: Sequence[PanelRecord], now: datetime) -> list[PanelRecord]:
    """The history moved so its last debate finished an hour before `now`."""
    shift = now - timedelta(hours=1) - history[-1].finished_at
    return [replace(p, finished_at=p.finished_at + shift) for p in history]


def panel_of_two(debate_id: str, index: int, *, review: ReviewLabel | None = None,
                 start: datetime = START) -> PanelRecord:
    """A plain two-judge panel that named "pro", `index` hours after `start`."""
    verdicts = tuple(JudgeVerdict(judge=name, model="gpt-4o-mini", shown_first=first,
                                  winner="pro", scores={"pro": 7.0, "con": 5.0})
                     for name, first in (("technical", "pro"), ("general", "con")))
    return PanelRecord(debate_id=debate_id, finished_at=start + timedelta(hours=index),
                       lengths={"pro": 1000, "con": 900}, verdicts=verdicts,
                       panel_winner="pro", review=review, preset="decision")


#: The golden ratio's fraction: i * GOLDEN mod 1 spreads evenly over [0, 1) (a low-discrepancy
#: sequence), so synthetic shares hold closely in a few hundred draws.
GOLDEN = (5 ** 0.5 - 1) / 2


def upheld_share(alpha: float) -> float:
    """How often reviewers uphold a result: 99 % from alpha 0.72, 70 % from 0.45, 20 % below.
    Published from c, the upheld share is 95 % at c = 0.6752 (alpha uniform on [0.2, 1])."""
    return 0.99 if alpha >= 0.72 else 0.7 if alpha >= 0.45 else 0.2


async def decided_history(db: Database, *, results: int, fraction: float,
                          start: datetime = START) -> datetime:
    """Results routed by the preset's thresholds, alphas spread evenly over [0.2, 1], a minute
    apart from `start`; every routed and spot-checked one decided, upheld at `upheld_share`.
    Written through the repositories; returns a moment just after the last."""
    for first in range(0, results, 100):
        async with db.transaction() as session:
            for i in range(first, min(first + 100, results)):
                debate_id, alpha = f"h-{i:05d}", 0.2 + 0.8 * ((i * 0.7548776662) % 1.0)
                at = start + timedelta(minutes=i)
                routing = route(alpha, False, ThresholdSpec())
                routed = routing in ROUTED_TO_HUMANS
                spot = not routed and spot_check(debate_id, fraction)
                result = judged_result(panel_of_two(debate_id, 0), alpha=alpha, routing=routing)
                await debates.create(session, topic_key=debate_id, record=make_record(
                    id=debate_id, preset="decision", created_at=at))
                await panels.record(session, result=result, finished_at=at, spot_check=spot,
                                    fraction=fraction)
                if spot or routed:
                    review = await reviews.create(session, debate_id=debate_id, reason="t",
                                                  spot_check=spot, now=at)
                    upheld = (i * GOLDEN) % 1.0 < upheld_share(alpha)
                    await reviews.decide(session, review_id=review.id, by=REVIEWER,
                                         status=ReviewStatus.APPROVED if upheld
                                         else ReviewStatus.ESCALATED,
                                         now=at + timedelta(seconds=1))
    return start + timedelta(minutes=results + 1)
