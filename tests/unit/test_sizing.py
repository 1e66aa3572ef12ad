"""Reply sizes (engine/money/sizing.py): the prior before there is data, what history teaches
(median and p90 per model and step kind), reasoning models, output caps, and the gate's "this call
and the rest of the plan" rule."""

from __future__ import annotations

import pytest

from engine.domain import Plan, PlannedCall, Usage
from engine.money.sizing import (
    CAP_CEILING,
    CAP_FLOOR,
    MIN_SAMPLES,
    Forecast,
    Observed,
    SizeBook,
    learn,
    output_cap,
    percentile,
    prior,
    step_kind,
)
from engine.money.spending import HEADROOM, Spending
from engine.ports import MemoryPurse
from engine.provider.profiles import is_reasoning_model
from engine.vocabulary import Mode


@pytest.mark.parametrize(("role", "phase", "kind"), [
    ("pro", "opening", "side:opening"), ("con", "rebuttal 2", "side:rebuttal"),
    ("judge", "judging", "judge:judging"), ("judge/risk", "judging", "judge:judging"),
    ("panelist/ops", "reflection 1", "panelist:reflection"),
    ("critic", "critique 3", "critic:critique"),
    ("synthesizer", "synthesis", "synthesizer:synthesis"),
])
def test_step_kinds(role: str, phase: str, kind: str) -> None:
    assert step_kind(role, phase) == kind


@pytest.mark.parametrize(("model", "reasoning"), [
    ("gpt-5", True), ("gpt-5-mini", True), ("openai/gpt-5-nano", True), ("o3", True),
    ("o4-mini", True), ("gpt-5-chat-latest", False), ("gpt-4o-mini", False), ("gpt-4.1", False),
    ("omni", False), ("deepseek-chat", False),
])
def test_reasoning_models(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


@pytest.mark.parametrize(("model", "kind", "effort", "typical", "high"), [
    ("gpt-4o-mini", "side:opening", None, 500, 1200),
    ("gpt-4o-mini", "panelist:answers", None, 500, 1200),
    ("gpt-4o-mini", "judge:judging", None, 600, 1400),
    ("gpt-5-mini", "side:opening", None, 1300, 4200),          # + medium reasoning
    ("gpt-5-mini", "judge:verdict", "medium", 1400, 4400),
    ("gpt-5-mini", "side:opening", "low", 800, 2400),
    ("o3", "side:opening", "minimal", 600, 1700),
])
def test_the_prior(model: str, kind: str, effort: str | None, typical: int, high: int) -> None:
    size = prior(model, kind, effort)
    assert (size.typical.completion, size.high.completion, size.samples) == (typical, high, 0)
    assert size.typical.prompt_ratio <= size.high.prompt_ratio


@pytest.mark.parametrize(("values", "fraction", "expected"), [
    ([1.0], 0.9, 1.0), ([5, 1, 3, 2, 4], 0.9, 5), ([5, 1, 3, 2, 4], 0.5, 3),
    (list(range(1, 11)), 0.9, 9), (list(range(1, 101)), 0.9, 90),
])
def test_percentile(values: list[float], fraction: float, expected: float) -> None:
    assert percentile(values, fraction) == expected


def _seen(completions: list[int], *, model: str = "m", kind: str = "side:opening",
          planned: int | None = 1000, prompt: int = 1500) -> list[Observed]:
    return [Observed(model=model, kind=kind, prompt_tokens=prompt, completion_tokens=c,
                     planned_prompt_tokens=planned) for c in completions]


def test_learning_takes_the_median_and_p90_of_the_newest() -> None:
    completions = [100 * i for i in range(1, 11)]          # 100 … 1,000
    book = learn(_seen(completions))
    size = book.size("m", "side:opening")
    assert (size.typical.completion, size.high.completion, size.samples) == (550, 900, 10)
    assert size.typical.prompt_ratio == size.high.prompt_ratio == 1.5
    assert book.size("m", "judge:judging") == prior("m", "judge:judging")  # nothing seen


def test_too_few_samples_keep_the_prior() -> None:
    book = learn(_seen([3000] * (MIN_SAMPLES - 1)))
    assert book.size("m", "side:opening") == prior("m", "side:opening")


def test_without_the_plans_prompt_only_the_reply_is_learned() -> None:
    size = learn(_seen([800] * MIN_SAMPLES, planned=None)).size("m", "side:opening")
    assert size.typical.completion == 800
    assert size.typical.prompt_ratio == prior("m", "side:opening").typical.prompt_ratio


def test_learning_keeps_models_apart_and_reads_the_newest_first() -> None:
    seen = _seen([2000] * 50, model="wordy") + _seen([100] * 50, model="terse")
    seen += _seen([9999] * 20, model="wordy")                # older than the 50 newest: unread
    book = learn(seen)
    assert book.size("wordy", "side:opening").high.completion == 2000
    assert book.size("terse", "side:opening").high.completion == 100


@pytest.mark.parametrize(("high", "cap"), [
    (100, CAP_FLOOR), (512, CAP_FLOOR), (1200, 2400), (4200, 8400), (20_000, CAP_CEILING),
])
def test_output_caps(high: int, cap: int) -> None:
    assert output_cap(high) == cap


PLAN = Plan(mode=Mode.SIMPLE, calls=(
    PlannedCall(key="o/pro", role="pro", phase="opening", depth=1, prompt_tokens=1000,
                completion_tokens=350),
    PlannedCall(key="o/con", role="con", phase="opening", depth=1, prompt_tokens=1000,
                completion_tokens=350),
    PlannedCall(key="v", role="judge", phase="verdict", depth=2, prompt_tokens=2000,
                completion_tokens=250),
))


def _tokens(usage: Usage, model: str) -> float:
    return usage.prompt_tokens + usage.completion_tokens      # "1 USD a token": easy sums


def test_the_rest_of_the_plan_is_at_high_sizes_and_forgets_what_started() -> None:
    forecast = Forecast(PLAN, models=dict.fromkeys(("o/pro", "o/con", "v"), "m"),
                        sizes=SizeBook(), cost=_tokens, judging=frozenset({"verdict"}))
    side, judge = (1000 * 2.0 + 1200), (2000 * 2.0 + 1400)
    assert forecast.rest_usd("o/pro", "opening") == side + judge
    forecast.start("o/pro")
    assert forecast.rest_usd("o/con", "opening") == judge
    # a judging call needs only the rest of the judging covered
    assert forecast.rest_usd("v", "verdict") == 0
    assert forecast.call_usage("o/con", "m", "con", "opening", 700) == Usage(
        prompt_tokens=700, completion_tokens=1200)


def test_a_wordy_debate_stretches_its_remaining_predictions() -> None:
    forecast = Forecast(PLAN, models=dict.fromkeys(("o/pro", "o/con", "v"), "m"),
                        sizes=SizeBook(), cost=_tokens)
    before = forecast.rest_usd("o/pro", "opening")
    forecast.observe("o/pro", "m", "pro", "opening", Usage(completion_tokens=2000))  # 4 × 500
    assert forecast.stretch == 4.0
    assert forecast.call_usage("v", "m", "judge", "verdict", 10).completion_tokens == 2400
    assert forecast.rest_usd("o/pro", "opening") > before


@pytest.mark.parametrize(("held", "rest", "judging", "admitted"), [
    (10.0, 0.0, False, True),     # the call alone fits
    (10.0, 6.0, False, True),     # 4 + 6: this call and the rest fit exactly
    (10.0, 6.5, False, False),    # the call fits, the rest after it does not: not made
    (3.0, 0.0, False, False),
])
async def test_the_gate_covers_this_call_and_the_rest(held: float, rest: float, judging: bool,
                                                      admitted: bool) -> None:
    spending = Spending(MemoryPurse(limit=held))
    assert await spending.admit(4.0, rest=rest, phase="p", after=None,
                                judging=judging) is admitted


async def test_after_an_argument_is_refused_only_judging_that_fits_runs() -> None:
    spending = Spending(MemoryPurse(limit=10.0))
    assert await spending.admit(4.0, rest=5.0, phase="opening", after=None)
    await spending.settle(4.0, 4.0)
    assert not await spending.admit(3.0, rest=4.0, phase="rebuttal 1", after="opening")
    assert not await spending.admit(1.0, rest=0.0, phase="rebuttal 1", after="opening")
    assert await spending.admit(4.0, rest=0.0, phase="verdict", after="rebuttal 1",
                                judging=True)
    assert spending.exhausted is not None and spending.exhausted.refused == 2


async def test_nothing_argued_nothing_judged() -> None:
    spending = Spending(MemoryPurse(limit=5.0))
    assert not await spending.admit(4.0, rest=5.0, phase="opening", after=None)
    assert not await spending.admit(1.0, rest=0.0, phase="verdict", after="opening",
                                    judging=True)


async def test_the_purse_is_topped_up_for_the_rest() -> None:
    purse = MemoryPurse(limit=2.0, extra=10.0)
    spending = Spending(purse)
    assert await spending.admit(1.0, rest=5.0, phase="p", after=None)
    # what it lacked (4.0), and room for the next calls' small misses (HEADROOM of the 6.0)
    asked = 4.0 + HEADROOM * 6.0
    assert abs(purse.limit - (2.0 + asked)) < 1e-9 and abs(purse.extra - (10.0 - asked)) < 1e-9
