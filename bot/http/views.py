"""What the console's templates show, computed in Python where it is more than a lookup: the
honest badges of a debate (addressed to the AI, rehearsal, downgraded, replay, re-run, cached,
incomplete), why a
result was routed where it was, each judge's row, money with enough digits to mean something at
a small cap. Pure functions of the records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.service.results import (
    FLAG_MARK,
    alpha_text,
    band_rule,
    evaluation_of,
    is_incomplete,
    marks,
    routing_sentence,
)
from bot.service.timeline import Timeline
from engine.domain import DebateResult
from engine.money.cost import usd as money
from engine.reading.outcomes import RedTeamOutcome
from engine.settings import ThresholdSpec
from engine.vocabulary import Routing
from storage.records import DebateRecord, DebateStatus, Origin, Review

#: the routing story's last sentence, a whole one for each routing
FLAG_BADGE = FLAG_MARK
ROUTED_TO_PEOPLE = (Routing.HUMAN_REVIEW, Routing.ESCALATE)
STATUS_TONE = {DebateStatus.COMPLETED: "good", DebateStatus.APPROVED: "good",
               DebateStatus.FAILED: "bad", DebateStatus.TIMED_OUT: "bad",
               DebateStatus.ESCALATED: "bad", DebateStatus.AWAITING_REVIEW: "warn"}


def usd(value: float | str, places: int | None = None) -> str:
    """Money as every surface writes it (engine/money/cost.py): $12.30, $0.05, $0.0042."""
    return money(float(value), decimals=places)


def seconds(value: float) -> str:
    """A duration as people read it: 840 ms, 12.3 s, 4 min 05 s."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest:02d} s"


def shorten(text: str, limit: int) -> str:
    """A list's one-line view of long text: cut to `limit` characters with an ellipsis (the
    debate's own page shows it whole)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Badge:
    text: str
    tone: str = ""       # "", "good", "warn", "bad", "info"
    href: str = ""


def badges(record: DebateRecord, *, rehearsal: bool = False) -> list[Badge]:
    """What a reader must know before trusting the result, in the order it matters: the status,
    then the marks every surface shows (bot/service/results.py)."""
    out = [Badge(record.status.value.replace("_", " "), STATUS_TONE.get(record.status, "info"))]
    run = record.origin.evaluation_id
    for mark in marks(record, rehearsal=rehearsal):
        href = (f"/debates/{mark.points_to}" if mark.points_to else
                f"/debates/{record.id}#addressed-to-ai" if mark.text == FLAG_BADGE else
                f"/evaluations/{run}" if run and mark.text == evaluation_of(record) else "")
        out.append(Badge(mark.text, mark.tone, href))
    return out


OWN_BOOKS = ("An evaluation's debate does not go to the review queue (its run did not ask: "
             "`dialectic eval --review`), so no reviewer was asked.")


def routing_story(result: DebateResult, thresholds: ThresholdSpec | None,
                  review: Review | None, origin: Origin | None = None) -> list[str]:
    """Why the result went where it went, one sentence per reason (an evaluation's debate
    routed to a person says it was kept from the queue)."""
    lines = []
    if result.flagged:
        lines.append("Its untrusted text addresses the AI, so a person reviews it whatever the "
                     "judges' agreement.")
    c = result.consensus
    if c is not None and thresholds is not None:
        lines.append(f"Alpha {alpha_text(c.alpha, thresholds)} is in the {c.band} band "
                     f"({band_rule(c.band, thresholds)}).")
    if c is not None and c.irreconcilable:
        lines.append("The panel splits on the winner with a wide spread: irreconcilable.")
    if isinstance(result.outcome, RedTeamOutcome) and result.outcome.consensus_reached is False:
        lines.append("The synthesizer reports no consensus between strategist and red team.")
    if is_incomplete(result):
        lines.append("The result is incomplete, so it cannot be published on its own.")
    lines.append(routing_sentence(result.routing))
    if origin is not None and result.routing in ROUTED_TO_PEOPLE and not origin.in_oversight:
        lines.append(OWN_BOOKS)
    if review is not None and review.spot_check:
        lines.append("A random spot check sent it to a reviewer all the same, so how often "
                     "routing publishes wrongly is measured.")
    elif review is not None and review.reason:
        lines.append(f"Review reason: {review.reason.rstrip('.')}.")
    return lines


@dataclass(frozen=True, slots=True)
class JudgeRow:
    name: str
    winner: str
    weight: float | None
    model: str
    rationale: str


def judge_rows(result: DebateResult, timeline: Timeline | None) -> list[JudgeRow]:
    """Each judge of the panel: its own winner, weight, model and rationale."""
    c = result.consensus
    if c is None:
        return []
    said: dict[str, str] = {}
    for phase in result.phases:
        said.update({k: v for k, v in phase.highlights.items() if k in c.judges})
    cards = timeline.judges if timeline is not None else {}
    rows = []
    for judge in c.judges:
        card = cards.get(judge)
        model = timeline.judge_model(judge) if timeline else c.models.get(judge, "")
        if c.families.get(judge):
            model = f"{model} ({c.families[judge]})"
        if c.excluded.get(judge):   # self-vote exclusion: its verdict does not count
            model += " · did not score " + ", ".join(str(s) for s in c.excluded[judge])
        rows.append(JudgeRow(judge, (card.winner or "") if card else "", c.weights.get(judge),
                             model, said.get(judge, "")))
    return rows


def mean_rubric(rubric: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """A live judge card's mean rubric score per side."""
    return {side: sum(dims.values()) / len(dims) for side, dims in rubric.items() if dims}


__all__ = ["Badge", "JudgeRow", "badges", "judge_rows", "mean_rubric", "routing_story",
           "seconds", "usd"]
