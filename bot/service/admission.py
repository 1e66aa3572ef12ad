"""Admission: whether a debate may start, one rule for every door and every surface.

A debate is admitted when its whole plan at verbose reply sizes (the high estimate, priced with
the models that answer) fits the per-debate ceiling (DIALECTIC_MAX_DEBATE_USD) and today's budget
beside what is already held and spent; a debate of a Slack workspace whose admins set a daily
budget of its own must fit that one too, beside what that workspace's debates hold and spent
(both caps, engine/money/cost.py `within_caps`; the refusal names the tighter); otherwise a
lower mode is tried when the preset allows (consensus -> structured -> simple), else it is
refused with the figures. Submitting applies the rule while reserving (storage/budget.py,
under the day's lock); `quote` applies it to tell whether the server would admit the debate
now (`dialectic estimate`, `/api/estimate`); bot/service/readmission.py applies it again on
the worker that claims a debate, with that worker's own provider and prices, so an estimate
made in another shell (a rehearsal one: $0) is never trusted.
This module reads no storage: `estimate` without a database loads no SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from engine.core.planning import Prepared, prepare
from engine.domain import Estimate
from engine.errors import BudgetExceeded
from engine.money.cost import (
    OVERALL,
    TODAY,
    WORKSPACE,
    Share,
    budget_left,
    budget_refusal,
    within_caps,
    within_ceiling,
)
from engine.settings import EngineSettings
from engine.vocabulary import Mode

DOWNGRADES = {Mode.CONSENSUS: Mode.STRUCTURED, Mode.STRUCTURED: Mode.SIMPLE}

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
class Day(Share):
    """Today's budget as admission reads it: the operator's cap over everyone and what is held
    and spent against it (a Share of the whole day), and the workspace's own, when it set one."""

    workspace: Share | None = None

    def fits(self, needed_usd: float) -> None:
        """BudgetExceeded, naming the cap, unless `needed_usd` fits every cap that applies."""
        within_caps(needed_usd, committed_usd=self.committed_usd, cap_usd=self.cap_usd,
                    workspace=self.workspace)

    def left(self) -> str:
        """What is left, of the tighter cap: "this workspace's daily budget has $1 of $2 left"."""
        own = self.workspace
        if own is not None and own.remaining_usd <= self.remaining_usd:
            return budget_left(remaining_usd=own.remaining_usd, cap_usd=own.cap_usd,
                               budget=WORKSPACE)
        return budget_left(remaining_usd=self.remaining_usd, cap_usd=self.cap_usd,
                           budget=TODAY if own is None else OVERALL)


async def quote(engine: EngineSettings, prepared: Prepared,
                estimate_of: Callable[[Prepared], Awaitable[Estimate]], day: Day) -> Estimate:
    """The estimate of the mode asked, saying whether the server would admit it now (and as
    which mode), in the words its refusal (HTTP 402) would use."""
    asked = prepared.request.mode

    async def fits(_: Prepared, estimate: Estimate) -> None:
        day.fits(estimate.usd_high)

    left = day.left()
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


_EPSILON = 1e-9


def refusal(estimate: Estimate, *, remaining_usd: float, cap_usd: float) -> str | None:
    """Why submitting the estimated debate now would be refused (its mode as estimated; a preset
    that allows it may run a cheaper mode instead), in the words submitting would use; None when
    it fits (the MCP server's `estimate_debate` says it before anything is reserved)."""
    try:
        within_ceiling(estimate)
    except BudgetExceeded as exc:
        return str(exc)
    if estimate.usd_high > remaining_usd + _EPSILON:
        return budget_refusal(remaining_usd=remaining_usd, cap_usd=cap_usd,
                              needed_usd=estimate.usd_high)
    return None


__all__ = ["DOWNGRADES", "Day", "admitted", "quote", "refusal"]
