"""Routing measured against the reviewers: how often a published result is overturned when spot
checked, how often a routed one is approved unchanged, and the deterministic spot-check sampler.

A result is *published* when routing lets it out without a reviewer ("auto_approve", or
"tentative", shown as tentative); it is *routed* when it waits for one ("human_review",
"escalate"). A reviewer *upholds* a result by approving it; "escalated" and "rerun" overturn it.
Pure functions; the threshold suggester built on the same records is in
``engine.oversight.thresholds``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.oversight.figure import Figure, not_enough_data, wilson_interval
from engine.oversight.panel_records import ReviewLabel
from engine.vocabulary import ROUTED_TO_HUMANS, Routing

__all__ = [
    "PUBLISHED",
    "ROUTED",
    "ROUTINGS",
    "PresetRouting",
    "RoutedOutcome",
    "needs_spot_check",
    "routing_against_humans",
    "spot_check",
]

#: Routings that publish without a reviewer, and those that wait for one.
PUBLISHED: frozenset[Routing] = frozenset({Routing.AUTO_APPROVE, Routing.TENTATIVE})
ROUTED: frozenset[Routing] = ROUTED_TO_HUMANS
#: The routings a judged result can have (modes without a panel route nowhere).
ROUTINGS: tuple[Routing, ...] = tuple(r for r in Routing if r is not Routing.NONE)
#: Salt of the spot-check hash, so the sample is independent of the judge order (also a hash
#: of the debate id).
SPOT_CHECK_SALT = "spot-check/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutedOutcome:
    """One finished debate as routed, and what a reviewer decided (if one has).

    ``inclusion_probability``: the chance this result was put before a reviewer when it was
    routed: 1.0 when routing sent it to review, the spot-check fraction then in force when it was
    published. The threshold suggester weighs each label by its inverse.
    """

    debate_id: str
    preset: str
    alpha: float | None
    irreconcilable: bool
    routing: Routing
    label: ReviewLabel | None = None  # None: never reviewed, or not decided yet
    spot_check: bool = False  # published, then sent to review by the sampler
    inclusion_probability: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 < self.inclusion_probability <= 1.0:
            raise ValueError("inclusion_probability must lie in (0, 1]")

    @property
    def upheld(self) -> bool | None:
        return None if self.label is None else self.label == "approved"


@dataclass(frozen=True, slots=True, kw_only=True)
class PresetRouting:
    """Per preset: results by routing, and the two rates that say whether routing is right.

    ``overturned``: of the spot-checked published results, the share a reviewer overturned,
    per published routing and for all of them ("published"). ``approved_unchanged``: of the
    routed results a reviewer decided (spot checks excluded), the share approved, per routed
    routing and for all of them ("routed"). ``pending``: results waiting for a decision.
    """

    preset: str
    results: dict[str, int]
    overturned: dict[str, Figure]
    approved_unchanged: dict[str, Figure]
    pending: int


# --------------------------------------------------------------------------- spot checks


def spot_check(debate_id: str, fraction: float, *, salt: str = SPOT_CHECK_SALT) -> bool:
    """Whether this debate is in the spot-check sample: the same answer on every replica, and
    nested (a debate sampled at 5 % is also sampled at 10 %), so raising the fraction only adds.
    The first 64 bits of sha256(salt:id), read as a uniform number in [0, 1), below fraction."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction must lie in [0, 1]")
    digest = hashlib.sha256(f"{salt}:{debate_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < fraction


def needs_spot_check(debate_id: str, routing: Routing, fraction: float) -> bool:
    """A published result drawn by the sampler goes to a reviewer, marked as a spot check."""
    return routing in PUBLISHED and spot_check(debate_id, fraction)


# --------------------------------------------------------------------------- rates


def _rate(name: str, hits: int, n: int, min_n: int, confidence: float, note: str) -> Figure:
    if n < max(min_n, 1):
        return not_enough_data(name, n, max(min_n, 1))
    return Figure(name=name, status="ok", n=n, min_n=min_n, estimate=hits / n,
                  interval=wilson_interval(hits, n, confidence), confidence=confidence,
                  detail={"count": hits}, note=note)


def _overturned(outcomes: Sequence[RoutedOutcome], groups: dict[str, frozenset[Routing]],
                min_n: int, confidence: float) -> dict[str, Figure]:
    result = {}
    for group, routings in groups.items():
        checked = [o for o in outcomes
                   if o.routing in routings and o.spot_check and o.label is not None]
        result[group] = _rate("overturned", sum(o.upheld is False for o in checked),
                              len(checked), min_n, confidence,
                              f"{group}: spot-checked results a reviewer overturned")
    return result


def _approved(outcomes: Sequence[RoutedOutcome], groups: dict[str, frozenset[Routing]],
              min_n: int, confidence: float) -> dict[str, Figure]:
    result = {}
    for group, routings in groups.items():
        decided = [o for o in outcomes
                   if o.routing in routings and not o.spot_check and o.label is not None]
        result[group] = _rate("approved_unchanged", sum(o.upheld is True for o in decided),
                              len(decided), min_n, confidence,
                              f"{group}: routed results a reviewer approved unchanged")
    return result


def routing_against_humans(outcomes: Iterable[RoutedOutcome], *, min_n: int = 20,
                           confidence: float = 0.95, presets: Iterable[str] = ()
                           ) -> dict[str, PresetRouting]:
    """Per preset (sorted): how the routing fared against the reviewers' decisions; `presets`
    are reported too when they have no judged result (their figures say "no data")."""
    by_preset: dict[str, list[RoutedOutcome]] = {name: [] for name in presets}
    for outcome in outcomes:
        by_preset.setdefault(outcome.preset, []).append(outcome)
    published: dict[str, frozenset[Routing]] = {"published": PUBLISHED}
    published.update({r: frozenset({r}) for r in sorted(PUBLISHED)})
    routed: dict[str, frozenset[Routing]] = {"routed": ROUTED}
    routed.update({r: frozenset({r}) for r in sorted(ROUTED)})
    report = {}
    for preset in sorted(by_preset):
        items = by_preset[preset]
        report[preset] = PresetRouting(
            preset=preset,
            results={r: sum(o.routing == r for o in items) for r in ROUTINGS},
            overturned=_overturned(items, published, min_n, confidence),
            approved_unchanged=_approved(items, routed, min_n, confidence),
            pending=sum(1 for o in items
                        if o.label is None and (o.routing in ROUTED or o.spot_check)),
        )
    return report
