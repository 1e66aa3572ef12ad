"""Readers' feedback (👍 / 👎 on a result) measured against routing, per preset. Pure functions.

A reader's thumb is *user feedback*, not a reviewer's label: it never enters the judge audit's
reviewer agreement, the threshold suggester or the evidence weights (those read reviews only).

Definitions (the same on every surface):

- *up* / *down*: the presses in force, one per reader and result (a second press replaces the
  first), on results argued by a model. Presses on rehearsal results are counted apart
  (`rehearsal`) and in nothing else.
- A result's *reading* is the majority of its readers' thumbs; a tie is no reading.
- The readers *agree* with a result when the majority is 👍 on a result routing let out (published
  automatically or as tentative), or 👎 on one routing held back for people (human review,
  escalated).
- A result of a mode without a judge panel was not routed: there is no routing to agree with.
  Its thumbs count in *up* / *down*, the result in *unrouted*, and it has no reading.
- *agreement* = results on which the readers agree / results with a reading (None: no reading).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from engine.vocabulary import ROUTED_TO_HUMANS, Routing

__all__ = ["RATINGS", "FeedbackLabel", "PresetFeedback", "Rating", "feedback_by_preset",
           "readers_agree"]

Rating = Literal["up", "down"]
RATINGS: tuple[Rating, ...] = get_args(Rating)


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedbackLabel:
    """One reader's feedback in force on one result, with how that result was routed."""

    debate_id: str
    preset: str
    routing: Routing
    rating: Rating | None   # None: a "Why?" written before (or without) a thumb
    rehearsal: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PresetFeedback:
    """Readers' feedback on one preset's results over a window (see the module's definitions)."""

    preset: str
    up: int = 0
    down: int = 0
    rated: int = 0        # results with a reading (a majority)
    agreeing: int = 0     # of them, where the readers agree with the routing
    rehearsal: int = 0    # presses on rehearsal results: shown, never counted above
    agreement: float | None = None   # agreeing / rated; None when no result has a reading
    unrouted: int = 0     # results with thumbs that had no routing to agree with (no panel)


def readers_agree(routing: Routing, up: int, down: int) -> bool | None:
    """Whether the readers' majority agrees with how the result was routed; None on a tie or
    when the result was not routed (a mode without a panel)."""
    if up == down or routing is Routing.NONE:
        return None
    held_back = routing in ROUTED_TO_HUMANS
    return (down > up) if held_back else (up > down)


def feedback_by_preset(labels: Iterable[FeedbackLabel]) -> dict[str, PresetFeedback]:
    """Counts and agreement per preset, presets in name order."""
    per_result: dict[str, tuple[FeedbackLabel, list[int]]] = {}
    rehearsal: dict[str, int] = {}
    for label in labels:
        if label.rating is None:
            continue
        if label.rehearsal:
            rehearsal[label.preset] = rehearsal.get(label.preset, 0) + 1
            continue
        _, counts = per_result.setdefault(label.debate_id, (label, [0, 0]))
        counts[0 if label.rating == "up" else 1] += 1
    totals: dict[str, list[int]] = {}
    for first, (up, down) in per_result.values():
        row = totals.setdefault(first.preset, [0, 0, 0, 0, 0])
        row[0] += up
        row[1] += down
        if first.routing is Routing.NONE:   # no panel, no routing: nothing to agree with
            row[4] += 1
            continue
        agrees = readers_agree(first.routing, up, down)
        if agrees is not None:
            row[2] += 1
            row[3] += int(agrees)
    names = sorted(set(totals) | set(rehearsal))
    return {name: _preset(name, totals.get(name, [0, 0, 0, 0, 0]), rehearsal.get(name, 0))
            for name in names}


def _preset(name: str, row: list[int], rehearsal: int) -> PresetFeedback:
    up, down, rated, agreeing, unrouted = row
    return PresetFeedback(preset=name, up=up, down=down, rated=rated, agreeing=agreeing,
                          rehearsal=rehearsal, agreement=agreeing / rated if rated else None,
                          unrouted=unrouted)
