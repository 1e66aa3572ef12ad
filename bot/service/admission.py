"""Admission: whether a debate may start, one rule for every door and every surface.

A debate is admitted when its whole plan at verbose reply sizes (the high estimate, priced with
the models that answer) fits the per-debate ceiling (DIALECTIC_MAX_DEBATE_USD) and today's budget
beside what is already held and spent; otherwise a lower mode is tried when the preset allows
(consensus -> structured -> simple), else it is refused with the figures. Submitting applies the
rule while reserving (storage/budget.py, under the day's lock); `quote` applies it to tell whether
the server would admit the debate now (`dialectic estimate`, `/api/estimate`); `readmit` applies
it again on the worker that claims a debate, with that worker's own provider and prices, so an
estimate made in another shell (a rehearsal one: $0) is never trusted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from typing import TypeVar

from engine.debate import Prepared, prepare
from engine.domain import Estimate
from engine.errors import BudgetExceeded
from engine.money.cost import budget_refusal, usd, within_budget, within_ceiling
from engine.money.sizing import ceiling
from engine.settings import EngineSettings
from engine.vocabulary import Mode
from storage import budget
from storage.db import Database

DOWNGRADES = {Mode.CONSENSUS: Mode.STRUCTURED, Mode.STRUCTURED: Mode.SIMPLE}
_EPSILON = 1e-9

T = TypeVar("T")


async def admitted(engine: EngineSettings, prepared: Prepared,
                   estimate_of: Callable[[Prepared], Awaitable[Estimate]],
                   attempt: Callable[[Prepared, Estimate], Awaitable[T]], *,
                   downgrade: bool = True) -> tuple[Prepared, Estimate, T]:
    """The mode that is admitted, its estimate and what `attempt` (which raises BudgetExceeded
    when today has no room) returned; BudgetExceeded when no mode the preset allows fits."""
    while True:
        estimate = await estimate_of(prepared)
        try:
            within_ceiling(estimate)
            return prepared, estimate, await attempt(prepared, estimate)
        except BudgetExceeded:
            lower = DOWNGRADES.get(prepared.request.mode)
            if lower is None or not prepared.preset.allow_downgrade or not downgrade:
                raise
            prepared = prepare(engine, prepared.request.model_copy(update={"mode": lower}))


@dataclass(frozen=True, slots=True)
class Day:
    """Today's budget as admission reads it."""

    cap_usd: float
    committed_usd: float   # held and spent

    @property
    def remaining_usd(self) -> float:
        return max(self.cap_usd - self.committed_usd, 0.0)


async def today(db: Database | None, day: date, cap_usd: float) -> Day:
    """Today's figures (a database not there yet: a fresh day)."""
    if db is None:
        return Day(cap_usd, 0.0)
    async with db.transaction(readonly=True) as session:
        state = await budget.state(session, day, cap_usd=cap_usd)
    return Day(cap_usd, state.reserved_usd + state.spent_usd)


async def quote(engine: EngineSettings, prepared: Prepared,
                estimate_of: Callable[[Prepared], Awaitable[Estimate]], day: Day) -> Estimate:
    """The estimate of the mode asked, saying whether the server would admit it now (and as
    which mode), in the words its refusal (HTTP 402) would use."""
    asked = prepared.request.mode

    async def fits(_: Prepared, estimate: Estimate) -> None:
        within_budget(estimate.usd_high, committed_usd=day.committed_usd, cap_usd=day.cap_usd)

    left = budget_refusal(remaining_usd=day.remaining_usd, cap_usd=day.cap_usd,
                          needed_usd=0.0).split(";")[0]
    try:
        chosen, estimate, _ = await admitted(engine, prepared, estimate_of, fits)
    except BudgetExceeded as exc:
        found = await estimate_of(prepared)
        return found.model_copy(update={"admitted": False,
                                        "admission": f"the server would refuse it now: {exc}"})
    words = f"the server would admit it now ({left})"
    if chosen.request.mode != asked:
        words = (f"the server would admit it now as {chosen.request.mode} (downgraded from "
                 f"{asked}, whose verbose estimate does not fit; {left})")
        estimate = await estimate_of(prepared)
    return estimate.model_copy(update={"admitted": True, "admission": words})


@dataclass(frozen=True, slots=True)
class Readmission:
    """What the claiming worker's own estimate decided: the ceiling the debate may hold up to,
    or why it cannot start (nothing was spent)."""

    ceiling_usd: float
    refused: str | None = None


async def readmit(db: Database, *, debate_id: str, estimate: Estimate, reserved_usd: float,
                  max_debate_usd: float | None, day: date, cap_usd: float,
                  hold: bool = True) -> Readmission:
    """On the worker that runs a debate, priced as this worker prices it: the ceiling it may hold
    up to (the operator's, or a multiple of the larger of its submitted and its own high
    estimate). Before its first call (`hold`) its plan must also fit that ceiling, and what it
    holds must cover its high estimate: a shortfall is held from today's free budget, or the
    debate is refused with the figures."""
    limit = ceiling(max(reserved_usd, estimate.usd_high), max_debate_usd)
    if not hold:   # a resumed run: its first run was admitted, and spent on that
        return Readmission(limit)
    try:
        within_ceiling(estimate)
        async with db.transaction() as session:  # a refusal rolls back what was granted
            held = await budget.held(session, debate_id)
            short = round(estimate.usd_high - held, 9)
            granted = 0.0 if short <= _EPSILON else await budget.extend(
                session, day=day, cap_usd=cap_usd, amount_usd=short, debate_id=debate_id)
            if short - granted > _EPSILON:
                raise BudgetExceeded(
                    budget_refusal(remaining_usd=held + granted, cap_usd=cap_usd,
                                   needed_usd=estimate.usd_high)
                    + f" (it was submitted holding {usd(held)}, priced elsewhere)",
                    estimate_usd=estimate.usd_high, remaining_usd=held + granted)
    except BudgetExceeded as exc:
        return Readmission(limit, f"refused by the worker that claimed it: {exc}")
    return Readmission(limit)


__all__ = ["DOWNGRADES", "Day", "Readmission", "admitted", "quote", "readmit", "today"]
