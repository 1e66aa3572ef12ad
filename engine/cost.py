"""Cost arithmetic: price usage by the settings' table, total it per model, estimate a plan."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.domain import CostBreakdown, Estimate, Plan, StepRecord, Usage
from engine.settings import ModelPrice
from engine.vocabulary import StepStatus

PriceLookup = Callable[[str], ModelPrice]


def price(usage: Usage, rate: ModelPrice) -> float:
    """USD for the tokens used, at USD per million tokens."""
    return (usage.prompt_tokens * rate.input + usage.completion_tokens * rate.output) / 1_000_000


def breakdown(records: list[StepRecord], reused: int = 0) -> CostBreakdown:
    """Totals over the steps that ran: per debate and per model."""
    by_model: dict[str, dict[str, float]] = {}
    total = CostBreakdown(reused_calls=reused)
    for rec in records:
        if rec.status is StepStatus.DEGRADED and rec.usage.prompt_tokens == 0:
            continue  # no call was billed
        total.usd += rec.cost_usd
        total.prompt_tokens += rec.usage.prompt_tokens
        total.completion_tokens += rec.usage.completion_tokens
        total.calls += rec.attempts
        row = by_model.setdefault(
            rec.model, {"usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        )
        row["usd"] += rec.cost_usd
        row["prompt_tokens"] += rec.usage.prompt_tokens
        row["completion_tokens"] += rec.usage.completion_tokens
        row["calls"] += rec.attempts
    total.usd = round(total.usd, 6)
    total.by_model = by_model
    return total


def estimate(
    plan: Plan,
    *,
    model_for: Callable[[str], str],
    price_for: PriceLookup,
    token_scale: Mapping[str, float] | None = None,
    rehearsal: bool = False,
) -> Estimate:
    """Expected cost of a plan. `token_scale[role family]` (or `["*"]` for every role) corrects
    the plan's token guesses with what recent debates used (actual / planned; 1.0 if unknown)."""
    scale = token_scale or {}
    prompt_total = completion_total = 0
    usd = 0.0
    for call in plan.calls:
        factor = scale.get(call.role.split("/", 1)[0], scale.get("*", 1.0))
        usage = Usage(
            prompt_tokens=round(call.prompt_tokens * factor),
            completion_tokens=round(call.completion_tokens * factor),
        )
        prompt_total += usage.prompt_tokens
        completion_total += usage.completion_tokens
        usd += price(usage, price_for(model_for(call.role)))
    return Estimate(
        mode=plan.mode,
        calls=len(plan.calls),
        depth=plan.depth,
        prompt_tokens=prompt_total,
        completion_tokens=completion_total,
        usd=round(usd, 6),
        calls_per_role=plan.calls_per_role(),
        rehearsal=rehearsal,
    )
