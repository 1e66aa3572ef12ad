"""What the judge audit and the routing audit read: one record per judged debate, with the order
each judge saw the sides in, each side's length, and the reviewer's decision as a label.

Also the one definition of "a judge agreed with the reviewer", used by the audit and by the
evidence-based judge weights alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from engine.domain import DebateResult

__all__ = [
    "REVIEW_LABELS",
    "SIDES",
    "AgreementCount",
    "JudgeKey",
    "JudgeVerdict",
    "PanelRecord",
    "ReviewLabel",
    "Side",
    "Winner",
    "agreement_counts",
    "agrees_with_reviewer",
    "panel_of",
    "side_means",
    "side_of",
    "winner_of",
]

Side = Literal["pro", "con"]
Winner = Literal["pro", "con", "tie"]
#: A reviewer's decision; the values of ``engine.domain.ReviewStatus`` other than "pending".
ReviewLabel = Literal["approved", "escalated", "rerun"]
SIDES: tuple[Side, ...] = get_args(Side)
REVIEW_LABELS: tuple[ReviewLabel, ...] = get_args(ReviewLabel)
JudgeKey = tuple[str, str]  # (judge name, model)


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeVerdict:
    """One judge's scorecard on one debate, mapped back from A/B to pro/con."""

    judge: str
    model: str
    shown_first: Side  # the side this judge saw as "Position A" (JudgeRun.order[0])
    winner: Winner | None  # None: the judge produced no scorecard
    scores: dict[Side, float]  # raw mean rubric score per side (1-10); empty without a scorecard
    # mixed-family panels (engine/oversight/family_audit.py); "" / (): recorded before
    family: str = ""                  # the judge's model family
    own_sides: tuple[Side, ...] = ()  # the sides argued by a model of that family
    excluded: tuple[Side, ...] = ()   # the sides self-vote exclusion kept it from scoring

    @property
    def key(self) -> JudgeKey:
        return (self.judge, self.model)


@dataclass(frozen=True, slots=True, kw_only=True)
class PanelRecord:
    """One judged pro/con debate: what each judge said, how long each side argued, what the
    reviewer decided (``review`` None while undecided or never reviewed)."""

    debate_id: str
    finished_at: datetime
    lengths: dict[Side, int]  # characters each side argued, over every phase
    verdicts: tuple[JudgeVerdict, ...]
    panel_winner: Winner | None  # DebateResult.winner
    review: ReviewLabel | None = None
    human_winner: Side | None = None  # the side a reviewer or an appeal named, when one did
    preset: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgreementCount:
    """How many reviewer-labelled debates a judge had a verdict on, and agreed on."""

    agreed: int
    labels: int




def side_means(items: Sequence[str], row: Sequence[float | None]) -> dict[Side, float]:
    """Mean rubric score per side from a ``ConsensusSummary`` row (items "pro.logic", ...);
    claim strengths are left out. Sides with no score are absent."""
    result: dict[Side, float] = {}
    for side in SIDES:
        values = [float(v) for item, v in zip(items, row, strict=True)
                  if item.startswith(f"{side}.") and v is not None]
        if values:
            result[side] = sum(values) / len(values)
    return result




def side_of(value: object) -> Side | None:
    """"pro" or "con" from any value that equals one (a vocabulary Side, stored text)."""
    return "pro" if value == "pro" else "con" if value == "con" else None


def winner_of(value: object) -> Winner | None:
    """A winner ("pro", "con", "tie") from any value that equals one; None otherwise."""
    return "tie" if value == "tie" else side_of(value)


def panel_of(result: DebateResult, finished_at: datetime) -> PanelRecord | None:
    """The judged debate a consensus result records (no review yet), or None when it has no
    panel or was judged before results kept each judge's order, winner and model."""
    c = result.consensus
    if c is None or not c.shown_first:
        return None
    verdicts = []
    for judge in c.judges:
        first = side_of(c.shown_first.get(judge))
        if first is None:
            continue
        row = c.ratings.get(judge, [])
        family = c.families.get(judge, "")
        verdicts.append(JudgeVerdict(
            judge=judge, model=c.models.get(judge, ""), shown_first=first,
            winner=winner_of(c.winners.get(judge)),
            scores=side_means(c.items, row) if len(row) == len(c.items) else {},
            family=family,
            own_sides=tuple(s for s in SIDES if family and family in c.side_families.get(s, [])),
            excluded=tuple(s for s in SIDES if s in c.excluded.get(judge, []))))
    lengths: dict[Side, int] = {side: int(c.lengths.get(side, 0)) for side in SIDES}
    return PanelRecord(debate_id=result.id, finished_at=finished_at, lengths=lengths,
                       verdicts=tuple(verdicts), panel_winner=winner_of(result.winner),
                       preset=result.preset or "")


def agrees_with_reviewer(judge_winner: Winner | None, panel_winner: Winner | None,
                         review: ReviewLabel | None, human_winner: Side | None = None
                         ) -> bool | None:
    """Whether a judge's verdict agreed with the human decision; None when there is no label.

    * a reviewer or appeal named the side that should win: agree iff the judge named it;
    * "approved" (the panel's verdict stands): agree iff the judge named the panel's winner;
    * "escalated" or "rerun" (the verdict was not accepted): agree iff the judge did *not*
      back the panel's winner (it dissented or called a tie against a decided panel).
    A judge with no verdict, or a debate with no panel winner and no named side, gives None.
    """
    if judge_winner is None:
        return None
    if human_winner is not None:
        return judge_winner == human_winner
    if review is None or panel_winner is None:
        return None
    if review == "approved":
        return judge_winner == panel_winner
    return judge_winner != panel_winner


def agreement_counts(panels: Iterable[PanelRecord]) -> dict[JudgeKey, AgreementCount]:
    """Per judge and model: labelled verdicts, and how many agreed (``agrees_with_reviewer``).
    A verdict self-vote exclusion kept out of the vote is left out: it decided nothing, and
    its judge's own family argued a side (engine/protocols/self_vote.py)."""
    agreed: dict[JudgeKey, int] = {}
    labels: dict[JudgeKey, int] = {}
    for panel in panels:
        for verdict in panel.verdicts:
            if verdict.excluded:   # self-vote exclusion: not a vote, and not a fair one
                continue
            agrees = agrees_with_reviewer(verdict.winner, panel.panel_winner, panel.review,
                                          panel.human_winner)
            if agrees is not None:
                labels[verdict.key] = labels.get(verdict.key, 0) + 1
                agreed[verdict.key] = agreed.get(verdict.key, 0) + int(agrees)
    return {k: AgreementCount(agreed=agreed[k], labels=labels[k]) for k in sorted(labels)}
