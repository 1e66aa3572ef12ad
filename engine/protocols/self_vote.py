"""Self-vote exclusion: a judge does not score a side argued by a model of its own family when the
panel has a judge of another family to score it (LLM judges prefer text of their own family;
Verga et al. 2024, "Replacing Judges with Juries"). When every judge that scored shares the side's
family (or is of a family nobody knows), they score it, and the result says so.

What exclusion takes away, and why (docs/providers.md "Mixed-family panels"):

* the judge's ratings of the side's items (its rubric and its claims): missing, not zero, in
  alpha (Krippendorff's alpha takes missing ratings natively), the calibrated rows, the weighted
  item scores and the divergence;
* the judge's verdict: its named winner, its per-dimension calls (kappa) and its rubric means in
  the headline, since each compares the side it may not score with the other. Its ratings of a
  side it may score still count.

Vote weights are not renormalised: the judges that vote share the vote in their configured (or
evidence) weights. The judge is still asked, and its whole scorecard is kept as it gave it
(`ConsensusSummary.ratings`, `winners`): that is what the judge audit measures self-preference
from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.runner import StepOutcome
from engine.protocols.procon import SIDE_NAME, SIDES, Transcript
from engine.provider.families import UNKNOWN
from engine.vocabulary import Side


@dataclass(frozen=True, slots=True)
class SelfVote:
    """Which judge scores which side not, and what the result says about it."""

    excluded: dict[str, list[Side]]   # judge -> the sides it did not score
    notes: list[str]

    def counts(self, judge: str, item_side: Side | None) -> bool:
        return item_side is None or item_side not in self.excluded.get(judge, [])

    def votes(self, judge: str) -> bool:
        """Whether the judge's verdict (winner, calls, means) counts: it scored both sides."""
        return not self.excluded.get(judge)


def side_steps(t: Transcript) -> dict[Side, list[StepOutcome[Any]]]:
    """Each side's steps over every phase, in order."""
    found: dict[Side, list[StepOutcome[Any]]] = {side: [] for side in SIDES}
    phases: list[Mapping[Side, StepOutcome[Any]]] = [t.openings, *t.rebuttals, *t.cross,
                                                     t.closings]
    for phase in phases:
        for side, step in phase.items():
            found[side].append(step)
    return found


def argued_by(t: Transcript) -> dict[Side, list[str]]:
    """The models that answered each side's steps, in the order first seen."""
    return {side: list(dict.fromkeys(s.record.model for s in steps if s.value is not None))
            for side, steps in side_steps(t).items()}


def side_families(models: Mapping[Side, list[str]], family: Callable[[str], str]
                  ) -> dict[Side, list[str]]:
    return {side: sorted({family(m) for m in models.get(side, [])}) for side in SIDES}


def self_vote(judges: Mapping[str, str], sides: Mapping[Side, list[str]]) -> SelfVote:
    """`judges`: each judge that scored -> its family; `sides`: each side -> the families that
    argued it. The exclusions, and a note for each exclusion and for each side its own family
    scored for want of another."""
    excluded: dict[str, list[Side]] = {}
    notes: list[str] = []
    for side in SIDES:
        known = {f for f in sides.get(side, []) if f != UNKNOWN}
        same = sorted(j for j, f in judges.items() if f in known)
        if not same:
            continue
        others = sorted(j for j, f in judges.items() if f != UNKNOWN and f not in known)
        argued = "/".join(sorted(known))
        if others:
            for judge in same:
                excluded.setdefault(judge, []).append(side)
            notes.append(
                f"self-vote exclusion: {', '.join(same)} ({argued}) did not score the "
                f"{SIDE_NAME[side]} side, argued by {argued}; "
                f"{', '.join(others)} ({', '.join(sorted({judges[j] for j in others}))}) did")
        else:
            notes.append(
                f"no self-vote exclusion possible: every judge that scored is {argued} (or of "
                f"an unknown family), like the {SIDE_NAME[side]} side's debater, so "
                f"{', '.join(same)} scored it; a judge of another family would have taken "
                "their place")
    return SelfVote(excluded, notes)


def item_sides(t: Transcript, items: list[str]) -> dict[str, Side | None]:
    """Each statistics item's side: `pro.logic` -> pro, `claim.P1` -> the side that made P1."""
    claims = {f"claim.{cid}": side for side in SIDES for cid, _ in t.claims(side)}
    found: dict[str, Side | None] = {}
    for item in items:
        head = item.partition(".")[0]
        found[item] = claims.get(item) if head == "claim" else (
            Side(head) if head in (Side.PRO, Side.CON) else None)
    return found


def counted_row(judge: str, row: list[float | None], items: list[str],
                sides: Mapping[str, Side | None], vote: SelfVote) -> list[float | None]:
    """The judge's row with the items of a side it may not score missing."""
    return [value if vote.counts(judge, sides[item]) else None
            for item, value in zip(items, row, strict=True)]


__all__ = ["SelfVote", "argued_by", "counted_row", "item_sides", "self_vote", "side_families",
           "side_steps"]
