"""Whether today's budget would admit a debate now, said before anything is reserved: the same
two checks `DebateService.submit` makes (the per-debate ceiling, then the day's room for the
whole plan at verbose sizes), in the same words, so a caller that asks first hears what submitting
would answer."""

from __future__ import annotations

from engine.domain import Estimate
from engine.errors import BudgetExceeded
from engine.money.cost import budget_refusal, within_ceiling

_EPSILON = 1e-9


def refusal(estimate: Estimate, *, remaining_usd: float, cap_usd: float) -> str | None:
    """Why submitting the estimated debate now would be refused (its mode as estimated; a preset
    that allows it may run a cheaper mode instead), or None when it fits."""
    try:
        within_ceiling(estimate)
    except BudgetExceeded as exc:
        return str(exc)
    if estimate.usd_high > remaining_usd + _EPSILON:
        return budget_refusal(remaining_usd=remaining_usd, cap_usd=cap_usd,
                              needed_usd=estimate.usd_high)
    return None


__all__ = ["refusal"]
