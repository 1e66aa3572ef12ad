"""The judge audit per model family: do a family's judges favour the side their own family argued,
and how often do they agree with the panel? Every figure is a count ("7 of 9") with its Wilson
interval, and marked small below the policy's minimum, so a handful of debates never reads as a
finding.

Self-preference is measured where it can be: on debates where exactly one side was argued by a
model of the judge's family (the other by another family, or by one nobody knows). There, the
share of the family's decisive verdicts that named its own family's side is set beside the share
of the decisive verdicts on the same debates of judges whose family argued neither side that
named that side: merit moves both, self-preference only the first. The judges' scorecards are
read as they gave them, also when self-vote exclusion kept them out of the vote
(engine/protocols/self_vote.py): that is the evidence the exclusion is for. Pure functions; the
caller chooses the window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.oversight.figure import wilson_interval
from engine.oversight.panel_records import SIDES, PanelRecord
from engine.vocabulary import UNKNOWN_FAMILY as UNKNOWN

__all__ = ["Count", "FamilyAudit", "audit_families"]


@dataclass(frozen=True, slots=True)
class Count:
    """`hits` of `n`, with its Wilson interval (None when n is 0)."""

    hits: int = 0
    n: int = 0
    confidence: float = 0.95

    @property
    def rate(self) -> float | None:
        return self.hits / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.hits, self.n, self.confidence) if self.n else None

    def plus(self, hit: bool) -> Count:
        return Count(self.hits + int(hit), self.n + 1, self.confidence)


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyAudit:
    """One model family's judges over the window."""

    family: str
    judges: tuple[str, ...]             # "name (model)"
    debates: int                        # debates with a verdict from this family
    own_side: Count                     # its decisive verdicts naming its own family's side
    others_on_own_side: Count           # other families' verdicts naming that side, same debates
    panel_agreement: Count              # its verdicts naming the panel's winner
    excluded: int                       # verdicts self-vote exclusion kept out of the vote
    min_n: int

    @property
    def self_preference(self) -> float | None:
        """Own-side share minus the other families' share on the same debates (None: either
        is unmeasured); meaningful only when `small` is False."""
        own, others = self.own_side.rate, self.others_on_own_side.rate
        return None if own is None or others is None else own - others

    @property
    def small(self) -> bool:
        return min(self.own_side.n, self.others_on_own_side.n) < self.min_n


@dataclass
class _Tally:
    judges: set[str] = field(default_factory=set)
    debates: int = 0
    own: Count = Count()
    others: Count = Count()
    panel: Count = Count()
    excluded: int = 0


def _unknown(model: str) -> str:
    return UNKNOWN


def audit_families(panels: Sequence[PanelRecord], *, min_n: int = 30,
                   confidence: float = 0.95,
                   family_of: Callable[[str], str] = _unknown) -> list[FamilyAudit]:
    """Per family of the judges in the window (sorted, "unknown" last). `family_of` names the
    family of a verdict recorded before families were (by its model; the settings' rule)."""
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for panel in panels:
        families = {v.key: v.family or family_of(v.model) for v in panel.verdicts}
        for family in sorted(set(families.values())):
            mine = [v for v in panel.verdicts if families[v.key] == family]
            tally = tallies[family]
            tally.debates += 1
            for verdict in mine:
                tally.judges.add(f"{verdict.judge} ({verdict.model})")
                tally.excluded += int(bool(verdict.excluded))
                if verdict.winner is not None and panel.panel_winner is not None:
                    tally.panel = tally.panel.plus(verdict.winner == panel.panel_winner)
            own_sides = next((v.own_sides for v in mine if v.own_sides), ())
            if family == UNKNOWN or len(own_sides) != 1:
                continue   # both sides, or neither, argued by this family: no preference to see
            side = own_sides[0]
            for verdict in mine:
                if verdict.winner in SIDES:
                    tally.own = tally.own.plus(verdict.winner == side)
            for other in panel.verdicts:
                neutral = families[other.key] not in (family, UNKNOWN) and not other.own_sides
                if neutral and other.winner in SIDES:   # a family that argued neither side
                    tally.others = tally.others.plus(other.winner == side)
    order = sorted(tallies, key=lambda f: (f == UNKNOWN, f))
    return [FamilyAudit(
        family=f, judges=tuple(sorted(tallies[f].judges)), debates=tallies[f].debates,
        own_side=Count(tallies[f].own.hits, tallies[f].own.n, confidence),
        others_on_own_side=Count(tallies[f].others.hits, tallies[f].others.n, confidence),
        panel_agreement=Count(tallies[f].panel.hits, tallies[f].panel.n, confidence),
        excluded=tallies[f].excluded, min_n=min_n) for f in order]
