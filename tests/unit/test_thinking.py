"""Output caps with room for hidden reasoning (engine/money/thinking.py): what a reasoning model
spends is learned per model and effort, a cap leaves room for the visible reply and the most it
spends, and the default ceiling holds the whole plan at its caps."""

from __future__ import annotations

import math
import random
from collections import deque

from engine.domain import Plan, PlannedCall, Usage
from engine.money.cost import estimate
from engine.money.sizing import CEILING_MULTIPLE, Forecast, Observed, SizeBook, learn, prior
from engine.money.thinking import (
    CAP_FLOOR,
    MIN_REPLIES,
    REASONING_MARGIN,
    REASONING_TOKENS,
    REPLIES_KEPT,
    Thinking,
    output_cap,
)
from engine.settings import ModelPrice
from engine.vocabulary import Mode

REASONER = "gpt-5-mini"
PLAN = Plan(mode=Mode.SIMPLE, calls=(
    PlannedCall(key="o/pro", role="pro", phase="opening", depth=1, prompt_tokens=1000,
                completion_tokens=350),
    PlannedCall(key="v", role="judge", phase="verdict", depth=2, prompt_tokens=2000,
                completion_tokens=250),
))


def _seen(completions: list[int], reasoning: int) -> list[Observed]:
    return [Observed(model=REASONER, kind="side:opening", prompt_tokens=1000,
                     completion_tokens=c + reasoning, reasoning_tokens=reasoning)
            for c in completions]


def test_before_any_reply_the_effort_prior_and_nothing_for_a_chat_model() -> None:
    thinking = Thinking()
    assert thinking.most(REASONER, "low") == REASONING_TOKENS["low"][1]
    assert thinking.most(REASONER, "high") == REASONING_TOKENS["high"][1]
    assert thinking.most(REASONER, None) == REASONING_TOKENS["medium"][1]
    assert thinking.most("gpt-4o-mini", "low") == 0


def test_what_replies_spent_is_learned_per_model_and_effort() -> None:
    thinking = Thinking()
    for tokens in (100, 400, 300, 250):
        thinking.observe(f"{REASONER}-2025-08-07", "low", tokens)   # the dated snapshot answers
    assert thinking.most(REASONER, "low") == REASONING_TOKENS["low"][1]   # too few yet
    thinking.observe(REASONER, "low", 200)
    assert MIN_REPLIES == 5
    assert thinking.most(REASONER, "low") == round(400 * REASONING_MARGIN)
    # another effort has learned nothing from them
    assert thinking.most(REASONER, "medium") == REASONING_TOKENS["medium"][1]


def test_the_most_follows_the_window_of_replies_kept() -> None:
    """The most is kept as replies come and go (not recomputed at each look): it follows the
    newest `REPLIES_KEPT`, falling when the largest leaves them, and the version moves exactly
    when the figure does."""
    rng = random.Random(7)
    thinking = Thinking()
    kept: deque[int] = deque(maxlen=REPLIES_KEPT)
    before = thinking.most(REASONER, "low")
    for i in range(REPLIES_KEPT * 4):
        # spikes now and then, so the largest keeps leaving the window
        tokens = rng.choice((rng.randint(0, 300), rng.randint(0, 3000))) if i % 50 else 5000 - i
        version = thinking.version
        thinking.observe(REASONER, "low", tokens)
        kept.append(tokens)
        expected = (math.ceil(max(kept) * REASONING_MARGIN) if len(kept) >= MIN_REPLIES
                    else REASONING_TOKENS["low"][1])
        now = thinking.most(REASONER, "low")
        assert now == expected
        assert (thinking.version != version) == (now != before)
        before = now


def test_the_cap_leaves_room_for_the_visible_reply_and_the_most_reasoning() -> None:
    assert output_cap(1100) == 2200                      # the reply sizes alone
    assert output_cap(1100, visible_high=700, reasoning_most=3000) == 4400
    assert output_cap(1100, visible_high=700, reasoning_most=100) == 2200   # never smaller
    assert output_cap(100, visible_high=100, reasoning_most=0) == CAP_FLOOR


def test_sizes_learned_at_low_effort_still_leave_room_at_medium() -> None:
    """The bug: a reply size learned at low effort (reasoning included) capped medium-effort
    replies at twice that, under what medium reasoning alone can spend."""
    book = learn(_seen([600, 650, 700, 700, 750] * 4, reasoning=500))
    assert book.size(REASONER, "side:opening").high.completion == 1250
    assert book.size(REASONER, "side:opening").visible_high == 750
    forecast = Forecast(PLAN, models=dict.fromkeys(("o/pro", "v"), REASONER), sizes=book,
                        cost=lambda usage, model: 0.0)
    high = forecast.call_usage("o/pro", REASONER, "pro", "opening", 900).completion_tokens
    medium = forecast.output_cap("o/pro", REASONER, "pro", "opening", "medium", high)
    assert medium == 2 * 750 + REASONING_TOKENS["medium"][1]
    # once medium replies are seen, the cap follows what they really spent
    for tokens in (1800, 2400, 900, 1500, 2000):
        forecast.observe("o/pro", REASONER, "pro", "opening",
                         Usage(completion_tokens=700 + tokens, reasoning_tokens=tokens),
                         effort="medium")
    learned = forecast.output_cap("o/pro", REASONER, "pro", "opening", "medium", high)
    assert learned >= 750 + 2400 and learned < medium + 2 * 750 * forecast.stretch


def test_the_default_ceiling_holds_the_whole_plan_at_its_output_caps() -> None:
    rate = ModelPrice(input=1.0, output=1.0)
    low = SizeBook(effort_for=lambda role: "low")
    assert prior(REASONER, "side:opening", "low").visible_high == 1200
    quiet = estimate(PLAN, model_for=lambda key: REASONER, price_for=lambda m: rate, sizes=low)
    assert quiet.ceiling_usd == round(CEILING_MULTIPLE * quiet.usd_high, 6)   # caps fit in 4 ×
    # sizes learned tiny (a wordless history), a high effort now: the caps' worst case is more
    thin = learn([Observed(model=REASONER, kind=kind, prompt_tokens=10, completion_tokens=60,
                           reasoning_tokens=50) for kind in ("side:opening", "judge:verdict")
                  for _ in range(5)])
    high = SizeBook(thin.learned, effort_for=lambda role: "high")
    short = Plan(mode=Mode.SIMPLE, calls=tuple(c.model_copy(update={"prompt_tokens": 10})
                                               for c in PLAN.calls))
    loud = estimate(short, model_for=lambda key: REASONER, price_for=lambda m: rate, sizes=high)
    at_caps = sum(u.prompt_tokens + u.completion_tokens
                  for u in (high.at_cap(c, REASONER) for c in short.calls)) / 1e6
    assert loud.ceiling_usd == round(at_caps, 6) > CEILING_MULTIPLE * loud.usd_high
