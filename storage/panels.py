"""Judged debates as routed, and the reviewers' decisions on them as labels: what the judge audit,
the routing audit and the threshold suggester read (engine/oversight/judge_audit.py,
routing_audit.py, thresholds.py).

A panel row is written when a consensus result is settled (rehearsals and results routed nowhere
are not). A decision is a label when it is about the verdict: approving upholds the result,
escalating or re-running overturns it, and a side a reviewer named says who should have won. A
decision about the run itself (a degraded step, a broken source) labels nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import DebateResult
from engine.oversight.panel_records import (
    JudgeVerdict,
    PanelRecord,
    ReviewLabel,
    Side,
    panel_of,
    side_of,
    winner_of,
)
from engine.oversight.routing_audit import ROUTED, RoutedOutcome
from engine.vocabulary import Routing
from storage.db import upserting, write
from storage.debates import in_oversight
from storage.models import DebateRow, PanelRow, ReviewRow, jsonable
from storage.records import DecisionAbout, ReviewStatus

__all__ = ["Labelled", "history", "label_of", "record"]

LABELS: dict[str, ReviewLabel] = {ReviewStatus.APPROVED.value: "approved",
                                  ReviewStatus.ESCALATED.value: "escalated",
                                  ReviewStatus.RERUN.value: "rerun"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Labelled:
    """One judged debate with its label: as the judge audit reads it (``panel``) and as the
    routing audit reads it (``outcome``; None for an incomplete result, routed for its gaps)."""

    panel: PanelRecord
    outcome: RoutedOutcome | None


async def record(session: AsyncSession, *, result: DebateResult, finished_at: datetime,
                 spot_check: bool, fraction: float) -> bool:
    """Keep the judged debate a settled result records (again, when a retried debate settles
    anew); False when there is nothing to keep: no panel, a rehearsal, routed nowhere, or
    flagged for text addressed to the AI (its judging and routing may have been steered)."""
    panel = panel_of(result, finished_at)
    c = result.consensus
    if (panel is None or c is None or result.rehearsal or result.routing is Routing.NONE
            or result.flagged):
        return False
    values: dict[str, Any] = {
        "preset": panel.preset, "finished_at": finished_at, "alpha": c.alpha,
        "band": c.band.value, "routing": result.routing.value,
        "irreconcilable": c.irreconcilable, "complete": result.complete,
        "winner": panel.panel_winner, "lengths": dict(panel.lengths),
        "verdicts": jsonable([_verdict_json(v) for v in panel.verdicts]),
        "weights": jsonable(c.weights),
        "thresholds": c.thresholds.model_dump(mode="json") if c.thresholds else None,
        "spot_check": spot_check, "spot_check_fraction": fraction,
    }
    await write(session, upserting(session, PanelRow, conflict=("debate_id",),
                                   update=tuple(values)),
                {"debate_id": result.id, **values})  # one statement
    return True


def _verdict_json(verdict: JudgeVerdict) -> dict[str, Any]:
    return {"judge": verdict.judge, "model": verdict.model, "shown_first": verdict.shown_first,
            "winner": verdict.winner, "scores": dict(verdict.scores), "family": verdict.family,
            "own_sides": list(verdict.own_sides), "excluded": list(verdict.excluded)}


def _sides(value: object) -> tuple[Side, ...]:
    found = value if isinstance(value, list) else []
    return tuple(s for s in (side_of(v) for v in found) if s is not None)


def _verdict(data: dict[str, Any]) -> JudgeVerdict | None:
    first = side_of(data.get("shown_first"))
    if first is None:
        return None
    raw = data.get("scores") or {}
    scores: dict[Side, float] = {side: float(raw[side]) for side in ("pro", "con")
                                 if isinstance(raw.get(side), int | float)}
    return JudgeVerdict(judge=str(data.get("judge", "")), model=str(data.get("model", "")),
                        shown_first=first, winner=winner_of(data.get("winner")), scores=scores,
                        family=str(data.get("family") or ""),
                        own_sides=_sides(data.get("own_sides")),
                        excluded=_sides(data.get("excluded")))


def label_of(status: str, about: str | None) -> ReviewLabel | None:
    """The label a decision gives the verdict; None while pending or when it is about the run."""
    if about == DecisionAbout.PROCESS.value:
        return None
    return LABELS.get(status)


def _labelled(row: PanelRow, review: ReviewRow | None) -> Labelled:
    label = None if review is None else label_of(review.status, review.about)
    named = None if review is None or label is None else side_of(review.named_winner)
    verdicts = tuple(v for data in row.verdicts if (v := _verdict(data)) is not None)
    lengths: dict[Side, int] = {side: int(row.lengths.get(side, 0)) for side in ("pro", "con")}
    panel = PanelRecord(debate_id=row.debate_id, finished_at=row.finished_at, lengths=lengths,
                        verdicts=verdicts, panel_winner=winner_of(row.winner), review=label,
                        human_winner=named, preset=row.preset)
    routing = Routing(row.routing)
    probability = 1.0 if routing in ROUTED or not row.spot_check else row.spot_check_fraction
    outcome = RoutedOutcome(
        debate_id=row.debate_id, preset=row.preset, alpha=row.alpha,
        irreconcilable=row.irreconcilable, routing=routing, label=label,
        spot_check=row.spot_check, inclusion_probability=probability,
    ) if row.complete and probability > 0 else None
    return Labelled(panel=panel, outcome=outcome)


async def history(session: AsyncSession, *, since: datetime, until: datetime | None = None,
                  presets: Sequence[str] = ()) -> list[Labelled]:
    """Judged debates finished in [since, until) (of these presets; all when none), oldest
    first, each with the latest decision a reviewer made on it. An evaluation's debates are
    not among them unless its run asked (`Origin.in_oversight`)."""
    where = [PanelRow.finished_at >= since]
    if until is not None:
        where.append(PanelRow.finished_at < until)
    if presets:
        where.append(PanelRow.preset.in_(list(presets)))
    rows = list(await session.scalars(
        select(PanelRow).join(DebateRow, DebateRow.id == PanelRow.debate_id)
        .where(*where, in_oversight())
        .order_by(PanelRow.finished_at, PanelRow.debate_id)))
    decided = await session.scalars(
        select(ReviewRow).join(PanelRow, PanelRow.debate_id == ReviewRow.debate_id)
        .where(*where, ReviewRow.status != ReviewStatus.PENDING.value)
        .order_by(ReviewRow.decided_at, ReviewRow.id))
    latest = {review.debate_id: review for review in decided}
    return [_labelled(row, latest.get(row.debate_id)) for row in rows]
