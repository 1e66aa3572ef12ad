"""Cost arithmetic: price usage at a model's rates (cached prompt tokens at the cached rate), total
it per model, estimate a plan (a range, typical to verbose, and the debate's ceiling; sizes from
engine/money/sizing.py), and write money and tokens the one way every surface shows them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from functools import lru_cache
from typing import Literal

from engine.domain import CostBreakdown, Estimate, Plan, StepRecord, Usage
from engine.errors import BudgetExceeded
from engine.money.prices import ModelPrice
from engine.money.sizing import CEILING_MULTIPLE, SizeBook, Which, ceiling

PriceLookup = Callable[[str], ModelPrice]
#: The token counts a cost breakdown totals, per debate and per model (Usage's fields).
TOKEN_COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
#: English runs near 4 characters a token; 3 keeps an estimate on the safe side of it.
ASCII_CHARS_PER_TOKEN = 3


#: how refusals name the caps (bot/service/admission.py: a workspace's debate fits both)
TODAY = "today's budget"
WORKSPACE = "this workspace's daily budget"
OVERALL = "today's budget over all workspaces"


def token_bound(text: str) -> int:
    """A conservative count of the tokens `text` costs, offline: ASCII at 3 characters a token,
    every other character at its UTF-8 bytes (a byte-level tokenizer never spends more)."""
    if text.isascii():   # known without reading it: most prompts, long ones included
        return math.ceil(len(text) / ASCII_CHARS_PER_TOKEN)
    ascii_chars = len(text.encode("ascii", "ignore"))
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_chars
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + other_bytes


def price(usage: Usage, rate: ModelPrice) -> float:
    """USD for the tokens used, at USD per million tokens: cached prompt tokens at the cached
    rate (the input rate when there is none), the rest at the input rate; completion tokens,
    reasoning included, at the output rate. What the provider itself said the tokens cost (a
    gateway's `usage.cost`) is the bill, and is taken as it is."""
    if usage.cost_usd is not None:
        return usage.cost_usd
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_rate = rate.input if rate.cached_input is None else rate.cached_input
    return ((usage.prompt_tokens - cached) * rate.input + cached * cached_rate
            + usage.completion_tokens * rate.output) / 1_000_000


def breakdown(records: list[StepRecord], reused: int = 0) -> CostBreakdown:
    """Totals over the steps that ran: per debate and per model."""
    by_model: dict[str, dict[str, float]] = {}
    total = CostBreakdown(reused_calls=reused)
    for rec in records:
        if rec.calls == 0 and rec.cost_usd == 0:
            continue  # nothing was billed: reused, read from a cache, or never answered
        total.usd += rec.cost_usd
        total.calls += rec.calls
        row = by_model.setdefault(rec.model, {"usd": 0.0, "calls": 0,
                                              **dict.fromkeys(TOKEN_COUNTS, 0)})
        row["usd"] += rec.cost_usd
        row["calls"] += rec.calls
        for name in TOKEN_COUNTS:
            count = getattr(rec.usage, name)
            setattr(total, name, getattr(total, name) + count)
            row[name] += count
    total.usd = round(total.usd, 6)
    total.by_model = by_model
    return total


def token_details(cost: CostBreakdown) -> str:
    """The parts of a debate's tokens billed differently, in words, only those that are not zero:
    "3,072 cached, 1,850 reasoning", "" when neither (every surface's cost line shows these)."""
    parts = [(cost.cached_tokens, "cached"), (cost.reasoning_tokens, "reasoning")]
    return ", ".join(f"{n:,} {word}" for n, word in parts if n)


def token_summary(cost: CostBreakdown) -> str:
    """"12,400 tokens (3,072 cached, 1,850 reasoning)", or "12,400 tokens" with neither."""
    details = token_details(cost)
    total = f"{cost.prompt_tokens + cost.completion_tokens:,} tokens"
    return f"{total} ({details})" if details else total


_WAYS: tuple[Which, ...] = ("low", "typical", "high")


def estimate(
    plan: Plan,
    *,
    model_for: Callable[[str], str],
    price_for: PriceLookup,
    sizes: SizeBook | None = None,
    rehearsal: bool = False,
    reused: frozenset[str] = frozenset(),
    max_debate_usd: float | None = None,
) -> Estimate:
    """What a plan costs, each call priced with `model_for(call.key)` at the reply sizes recent
    debates showed (`sizes`; the prior without): low (short), typical and high (verbose).
    `reused` step keys cost nothing. The ceiling is what the debate may hold at most:
    `max_debate_usd`, or a multiple of the high figure."""
    book = sizes or SizeBook()
    # plain sums, not Usage additions: a /debate ack estimates every planned call three ways
    prompt = {"low": 0, "typical": 0, "high": 0}
    completion = {"low": 0, "typical": 0, "high": 0}
    usd = {"low": 0.0, "typical": 0.0, "high": 0.0}
    at_caps = 0.0   # every reply at its output cap: the most the plan can cost
    calls = [c for c in plan.calls if c.key not in reused]
    for call in calls:
        model = model_for(call.key)
        rate = price_for(model)
        at_caps += price(book.at_cap(call, model), rate)
        for which in _WAYS:
            usage = book.usage(call, model, which)
            prompt[which] += usage.prompt_tokens
            completion[which] += usage.completion_tokens
            usd[which] += price(usage, rate)
    high = round(usd["high"], 6)
    return Estimate(
        mode=plan.mode,
        calls=len(calls),
        depth=len({call.depth for call in calls}),   # parallel calls are one round
        reused=len(plan.calls) - len(calls),
        prompt_tokens=prompt["typical"],
        completion_tokens=completion["typical"],
        completion_tokens_high=completion["high"],
        usd=round(usd["typical"], 6),
        usd_low=round(usd["low"], 6),
        usd_high=high,
        ceiling_usd=round(ceiling(high, max_debate_usd, at_caps), 6),
        ceiling_configured=max_debate_usd is not None,
        calls_per_role=plan.calls_per_role(skip=reused),
        rehearsal=rehearsal,
    )


def within_ceiling(estimate: Estimate) -> None:
    """BudgetExceeded for a debate whose whole plan at verbose sizes does not fit the operator's
    per-debate ceiling: refused (or downgraded) like one the day has no room for."""
    if estimate.ceiling_configured and estimate.usd_high > estimate.ceiling_usd + 1e-9:
        raise BudgetExceeded(
            f"this debate may cost up to {usd(estimate.usd_high, rounding='up')} with verbose "
            f"replies, above the per-debate ceiling of {usd(estimate.ceiling_usd)} "
            "(DIALECTIC_MAX_DEBATE_USD)", estimate_usd=estimate.usd_high,
            remaining_usd=estimate.ceiling_usd)


def within_budget(needed_usd: float, *, committed_usd: float, cap_usd: float,
                  budget: str = TODAY) -> None:
    """BudgetExceeded when `needed_usd` more does not fit under today's cap beside what is
    already held and spent (`committed_usd`): the rule every reservation and estimate applies.
    `budget` names the cap in the refusal."""
    if committed_usd + needed_usd > cap_usd + 1e-9:
        remaining = max(cap_usd - committed_usd, 0.0)
        raise BudgetExceeded(budget_refusal(remaining_usd=remaining, cap_usd=cap_usd,
                                            needed_usd=needed_usd, budget=budget),
                             estimate_usd=needed_usd, remaining_usd=remaining)


@dataclass(frozen=True, slots=True)
class Share:
    """A workspace's own daily cap, and what its debates already hold and spent today."""

    cap_usd: float
    committed_usd: float

    @property
    def remaining_usd(self) -> float:
        return max(self.cap_usd - self.committed_usd, 0.0)


def within_caps(needed_usd: float, *, committed_usd: float, cap_usd: float,
                workspace: Share | None) -> None:
    """`within_budget` for a debate of a workspace with its own cap: it must fit that cap
    *and* the operator's over every workspace; the refusal names the tighter one."""
    if workspace is None:
        within_budget(needed_usd, committed_usd=committed_usd, cap_usd=cap_usd)
        return
    checks = [(workspace.remaining_usd, workspace.committed_usd, workspace.cap_usd, WORKSPACE),
              (max(cap_usd - committed_usd, 0.0), committed_usd, cap_usd, OVERALL)]
    for _, committed, cap, name in sorted(checks, key=lambda c: c[0]):
        within_budget(needed_usd, committed_usd=committed, cap_usd=cap, budget=name)


def estimate_range(estimate: Estimate) -> str:
    """The estimate as every surface shows it: "$0.03–$0.12" (short to verbose replies; the
    typical figure, `usd`, lies between)."""
    places = usd_decimals(estimate.usd_low or estimate.usd, estimate.usd_high)
    low = usd(estimate.usd_low or estimate.usd, decimals=places, rounding="down")
    high = usd(estimate.usd_high, decimals=places, rounding="up")
    return low if low == high else f"{low}–{high}"


def ceiling_note(estimate: Estimate) -> str:
    """Where the per-debate ceiling comes from, and how to change it."""
    amount = usd(estimate.ceiling_usd, rounding="up")
    if estimate.ceiling_configured:
        return f"ceiling {amount} (DIALECTIC_MAX_DEBATE_USD)"
    if estimate.ceiling_usd > CEILING_MULTIPLE * estimate.usd_high + 1e-6:
        return (f"ceiling {amount} = the whole plan with every reply at its output cap; set "
                "DIALECTIC_MAX_DEBATE_USD to change it")
    return (f"ceiling {amount} = {CEILING_MULTIPLE:g} × the high estimate; set "
            "DIALECTIC_MAX_DEBATE_USD to change it")


def estimate_line(estimate: Estimate) -> str:
    """"~10 calls · $0.03–$0.12 · ceiling …", or what answers it when a finished debate does."""
    if estimate.cached_from:
        return f"no new calls, $0: reuses debate {estimate.cached_from}"
    return f"~{estimate.calls} calls · {estimate_range(estimate)} · {ceiling_note(estimate)}"


def reuse_note(estimate: Estimate) -> str:
    """What the estimate reuses instead of paying for, in one line ("" when nothing): the
    finished debate whose result answers the request, or the steps a replay reads."""
    steps = f"{estimate.reused} step{'' if estimate.reused == 1 else 's'}"
    if estimate.cached_from:
        return (f"answered by debate {estimate.cached_from}, finished within the cache window: "
                f"its result ({steps}) is reused, no new calls, $0 (no_cache asks anew)")
    if estimate.reused:
        return f"{steps} read from the source debate at no cost; only the new calls are priced"
    return ""


def stand_in_note(estimate: Estimate) -> str:
    """The names priced pessimistically, in one line ("" when none)."""
    if not estimate.stand_ins:
        return ""
    names = ", ".join(estimate.stand_ins)
    return (f"{names} priced as {estimate.stand_in} (pessimistic, with its reasoning "
            "allowance): no endpoint has answered for it yet and no price catalogue knows it; "
            "after its first reply, what answers is priced")


# --- money as text ----------------------------------------------------------------------------

Rounding = Literal["nearest", "down", "up"]
_ROUNDING = {"nearest": ROUND_HALF_EVEN, "down": ROUND_FLOOR, "up": ROUND_CEILING}
MAX_DECIMALS = 6


def usd_decimals(*amounts: float) -> int:
    """Decimals that show amounts side by side truthfully: 2, or as many (up to 6) as the
    smallest amount that is not zero needs for its first significant digit."""
    smallest = min((abs(a) for a in amounts if a), default=0.0)
    if not smallest or smallest >= 0.01:
        return 2
    return min(MAX_DECIMALS, -math.floor(math.log10(smallest)))


def usd(amount: float, *, decimals: int | None = None, rounding: Rounding = "nearest") -> str:
    """Dollars as every surface writes them. Alone: "$4.20", "$1,250.00", "$0.0734", "$0.50",
    "$0.00002" (never "$0.00" for money that is not zero); `decimals` fixes the places."""
    if decimals is None:
        places = 2 if abs(amount) >= 1 or amount == 0 else max(4, usd_decimals(amount))
        text = _quantized(amount, places, rounding)
        whole, _, cents = text.partition(".")
        trimmed = cents.rstrip("0").ljust(2, "0")
        return f"${whole}.{trimmed}"
    return f"${_quantized(amount, decimals, rounding)}"


def _quantized(amount: float, places: int, rounding: Rounding) -> str:
    # money is kept to 9 decimals (storage/budget.py): rounding down 0.000299999... is noise
    return _quantized_figure(repr(round(float(amount), 9)), places, rounding)


@lru_cache(maxsize=4096)   # an ack's estimate is five amounts, the same across a burst
def _quantized_figure(figure: str, places: int, rounding: Rounding) -> str:
    """`figure` (a float's repr: -0.0 is not 0.0 here) to `places` decimals, with thousands."""
    exact = Decimal(figure).quantize(Decimal(1).scaleb(-places), rounding=_ROUNDING[rounding])
    return f"{exact:,.{places}f}"


def budget_refusal(*, remaining_usd: float, cap_usd: float, needed_usd: float,
                   budget: str = TODAY) -> str:
    """Why a debate does not fit today's budget, in figures precise enough to compare at any
    cap: what is left rounded down, what it needs rounded up, all with the same decimals."""
    places = usd_decimals(remaining_usd, cap_usd, needed_usd)
    needs = usd(needed_usd, decimals=places, rounding="up")
    left = budget_left(remaining_usd=remaining_usd, cap_usd=cap_usd, decimals=places,
                       budget=budget)
    return f"{left}; this debate needs about {needs}"


def budget_left(*, remaining_usd: float, cap_usd: float, decimals: int | None = None,
                budget: str = TODAY) -> str:
    """"today's budget has $9.50 of $10.00 left" (what is left rounded down)."""
    places = usd_decimals(remaining_usd, cap_usd) if decimals is None else decimals
    left = usd(remaining_usd, decimals=places, rounding="down")
    return f"{budget} has {left} of {usd(cap_usd, decimals=places)} left"
