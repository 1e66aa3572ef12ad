"""The storage half of admission (bot/service/admission.py): today's figures as admission reads
them, and the re-admission of a debate by the worker that claims it, priced with that worker's
own provider and prices (never the asking shell's estimate)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from bot.service.admission import Day
from engine.domain import Estimate
from engine.errors import BudgetExceeded
from engine.money.cost import budget_refusal, usd, within_ceiling
from engine.money.sizing import ceiling
from storage import budget
from storage.db import Database
from storage.journal import glances_for, lookups_for

_EPSILON = 1e-9


async def today(db: Database | None, day: date, cap_usd: float, *,
                team_id: str | None = None) -> Day:
    """Today's figures (a database not there yet: a fresh day); with `team_id`, that
    workspace's own cap and share too, if it set one."""
    if db is None:
        return Day(cap_usd, 0.0)
    # the estimates of the moment (a burst of /debate acks) share one batch of reads, each on
    # its own (an estimate is a glance: admission reads again when the debate is submitted)
    committed, own = await glances_for(db).read(budget.committed_many, (day, cap_usd, team_id))
    return Day(cap_usd, committed, own)


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
    estimate). Before its first call (`hold`) what it holds grows to this worker's high estimate
    as far as today's free budget and the ceiling allow; it is refused, with the figures, when
    even its typical estimate does not fit them (it could not be expected to finish). A debate
    whose estimate merely drifted since submission (reply sizes learned meanwhile) is not
    refused: its purse governs the rest, as for any debate."""
    limit = max(ceiling(max(reserved_usd, estimate.usd_high), max_debate_usd),
                estimate.ceiling_usd)   # never below the plan at its output caps
    if not hold:   # a resumed run: its first run was admitted, and spent on that
        return Readmission(limit)
    try:
        if estimate.usd > limit + _EPSILON:
            within_ceiling(estimate.model_copy(update={"usd_high": estimate.usd}))
        # what it holds, read with the other debates starting at the moment: most hold their
        # high estimate since submission and need no write at all (the transaction below
        # decided the same from the same read, holding SQLite's write lock to do it)
        held = await lookups_for(db).read(budget.held_batch, debate_id)
        if (round(min(estimate.usd_high, limit) - held, 9) <= _EPSILON
                and held >= estimate.usd - _EPSILON):
            return Readmission(limit)
        async with db.transaction() as session:  # a refusal rolls back what was granted
            held = await budget.held(session, debate_id)
            wanted = round(min(estimate.usd_high, limit) - held, 9)
            granted = 0.0 if wanted <= _EPSILON else await budget.extend(
                session, day=day, cap_usd=cap_usd, amount_usd=wanted, debate_id=debate_id)
            if held + granted < estimate.usd - _EPSILON:
                raise BudgetExceeded(
                    budget_refusal(remaining_usd=held + granted, cap_usd=cap_usd,
                                   needed_usd=estimate.usd)
                    + f" (it was submitted holding {usd(held)}, priced elsewhere)",
                    estimate_usd=estimate.usd, remaining_usd=held + granted)
    except BudgetExceeded as exc:
        return Readmission(limit, f"refused by the worker that claimed it: {exc}")
    return Readmission(limit)


__all__ = ["Readmission", "readmit", "today"]
