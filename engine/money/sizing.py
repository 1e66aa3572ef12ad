"""Reply sizes: what a step's prompt and reply will really cost, per model and step kind.

A plan writes fixed sizes into its calls (a side's argument: 350 tokens); real replies are
longer, and a reasoning model bills hidden reasoning tokens as output. Predictions therefore come
from what recent debates' steps really used, per model and step *kind* (the role family, pro and
con being one "side" family, and the phase: "side:opening", "judge:judging"): a typical (median)
and a high (p90) reply size, and a prompt size against the plan's. Before there is data, a prior.

`Forecast` is one debate's view of it while it runs: a call may start only if the debate's money
covers this call (its real prompt, the high reply) AND the rest of its plan at high sizes, judging
included, so no argument is paid for that cannot be judged. The forecast also learns from the
debate's own replies (a debate that turns out wordy predicts its remaining calls wordier) and
gives each call its output cap. The service reads history through `UsageHistory` (a port), so
the engine imports no storage.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, Protocol

from engine.domain import Plan, PlannedCall, Usage
from engine.money.thinking import (
    CAP_CEILING,
    CAP_FACTOR,
    CAP_FLOOR,
    REASONING_TOKENS,
    Thinking,
    output_cap,
    prior_reasoning,
)
from engine.provider.profiles import undated

Which = Literal["low", "typical", "high"]

SIDES = frozenset({"pro", "con"})
#: A reply's size before there is data: (typical, high) completion tokens.
PRIOR_REPLY = (500, 1_200)
PRIOR_JUDGE = (600, 1_400)
#: Real prompts against the plan's: replies carried into later prompts run past the plan's size.
PRIOR_PROMPT_RATIO = (1.25, 2.0)
#: The low end of a prior's range: replies half the typical size, prompts this much of it.
LOW_PROMPT_FACTOR = 0.7
#: Samples of one model and kind needed before they replace the prior; the newest kept of each.
MIN_SAMPLES = 5
PER_KIND = 50
#: Steps read back from history, newest first.
HISTORY_STEPS = 2_000
#: How far a debate's own replies may stretch its remaining predictions.
MAX_STRETCH = 8.0
#: The per-debate ceiling, when the operator set none: this many times the high estimate.
CEILING_MULTIPLE = 4.0

_ROUND = re.compile(r"[\s/_-]*\d+$")


@lru_cache(maxsize=4096)   # pure, and asked for every planned call of every estimate
def step_kind(role: str, phase: str) -> str:
    """"side:opening", "judge:judging", "panelist:reflection": the role family (pro and con as
    one), the phase without its round number."""
    family = role.split("/", 1)[0]
    if family in SIDES:
        family = "side"
    return f"{family}:{_ROUND.sub('', phase)}"


@dataclass(frozen=True, slots=True)
class Size:
    completion: int
    prompt_ratio: float


@dataclass(frozen=True, slots=True)
class StepSize:
    """A step kind's typical and high size on one model; `samples` 0: the prior."""

    typical: Size
    high: Size
    samples: int = 0
    low: Size | None = None   # short replies (p10); None: half the typical reply, same prompt
    #: the visible reply's high size, hidden reasoning left out (it depends on the effort, not
    #: the step: engine/money/thinking.py); None: unknown
    visible_high: int | None = None

    def of(self, which: Which) -> Size:
        if which == "low":
            return self.low or Size(self.typical.completion // 2,
                                    self.typical.prompt_ratio * LOW_PROMPT_FACTOR)
        return self.typical if which == "typical" else self.high


@lru_cache(maxsize=4096)   # pure (StepSize is frozen), and asked for every planned call
def prior(model: str, kind: str, effort: str | None = None) -> StepSize:
    """Sizes before any debate ran: a judge's scorecard runs longer than an argument, and a
    reasoning model adds its hidden reasoning (by effort; medium when unset)."""
    typical, high = PRIOR_JUDGE if kind.startswith("judge:") else PRIOR_REPLY
    visible = high
    extra = prior_reasoning(model, effort)
    typical, high = typical + extra[0], high + extra[1]
    ratio_typical, ratio_high = PRIOR_PROMPT_RATIO
    return StepSize(Size(typical, ratio_typical), Size(high, ratio_high), visible_high=visible)


@dataclass(frozen=True, slots=True)
class Observed:
    """One finished step's usage per billed reply, and (when known) its plan's prompt size."""

    model: str
    kind: str
    prompt_tokens: int
    completion_tokens: int
    planned_prompt_tokens: int | None = None
    reasoning_tokens: int = 0   # of completion_tokens: hidden reasoning
    debate_id: str = ""      # where it was seen (the service reads the plan's prompt from it)
    key: str = ""


class UsageHistory(Protocol):
    """Recent steps' usage, newest first, at most `limit` (the service reads it from storage)."""

    async def recent_usage(self, limit: int) -> Sequence[Observed]: ...


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (p90 of 5 values is the largest)."""
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


def _learned(samples: list[Observed], base: StepSize) -> StepSize:
    completions = [o.completion_tokens for o in samples]
    typical, high, low = base.typical, base.high, base.of("low")
    visible_high = base.visible_high
    if len(completions) >= MIN_SAMPLES:
        visible_high = round(percentile([max(o.completion_tokens - o.reasoning_tokens, 0)
                                         for o in samples], 0.9))
        median = round(statistics.median(completions))
        typical = Size(median, typical.prompt_ratio)
        high = Size(max(round(percentile(completions, 0.9)), median), high.prompt_ratio)
        low = Size(min(round(percentile(completions, 0.1)), median), low.prompt_ratio)
    ratios = [o.prompt_tokens / o.planned_prompt_tokens for o in samples
              if o.planned_prompt_tokens]
    if len(ratios) >= MIN_SAMPLES:
        median_ratio = statistics.median(ratios)
        typical = Size(typical.completion, round(median_ratio, 4))
        high = Size(high.completion, round(max(percentile(ratios, 0.9), median_ratio), 4))
        low = Size(low.completion, round(min(percentile(ratios, 0.1), median_ratio), 4))
    return StepSize(typical, high, samples=len(samples), low=low, visible_high=visible_high)


@dataclass(frozen=True, slots=True)
class SizeBook:
    """Sizes by (model, kind): learned where history has enough samples, else the prior."""

    learned: Mapping[tuple[str, str], StepSize] = field(default_factory=dict)
    #: the reasoning effort each role family asks for (the settings' `effort_for`); a reasoning
    #: model's prior grows with it
    effort_for: Callable[[str], str | None] | None = None
    #: hidden reasoning per model and effort, learned from this process's replies (the service
    #: hands the same one to every book it learns): what output caps leave room for
    thinking: Thinking = field(default_factory=Thinking)

    def size(self, model: str, kind: str, effort: str | None = None) -> StepSize:
        learned = self.learned.get((undated(model), kind))
        if learned is not None:
            return learned
        if effort is None and self.effort_for is not None:
            family = kind.split(":", 1)[0]
            effort = self.effort_for("pro" if family == "side" else family)
        return prior(model, kind, effort)

    def effort(self, role: str) -> str | None:
        """The reasoning effort a role asks for (None when the book was not told)."""
        return self.effort_for(role) if self.effort_for is not None else None

    def at_cap(self, call: PlannedCall, model: str) -> Usage:
        """A planned call's worst case: its prompt at the high size, its reply at its output cap
        (room for the visible reply and the most hidden reasoning at its effort)."""
        size = self.size(model, step_kind(call.role, call.phase))
        cap = output_cap(size.high.completion, visible_high=size.visible_high,
                         reasoning_most=self.thinking.most(model, self.effort(call.role)))
        return Usage(prompt_tokens=math.ceil(call.prompt_tokens * size.high.prompt_ratio),
                     completion_tokens=cap)

    def usage(self, call: PlannedCall, model: str, which: Which) -> Usage:
        """A planned call's tokens at the typical or high size."""
        size = self.size(model, step_kind(call.role, call.phase)).of(which)
        return Usage(prompt_tokens=math.ceil(call.prompt_tokens * size.prompt_ratio),
                     completion_tokens=size.completion)


def learn(observed: Iterable[Observed]) -> SizeBook:
    """A size book from observations, newest first: each (model, kind) with `MIN_SAMPLES` of
    its `PER_KIND` newest learns its median and p90; the rest keep the prior."""
    groups: dict[tuple[str, str], list[Observed]] = {}
    for item in observed:
        group = groups.setdefault((undated(item.model), item.kind), [])
        if len(group) < PER_KIND:
            group.append(item)
    return SizeBook({key: _learned(samples, prior(*key))
                     for key, samples in groups.items() if len(samples) >= MIN_SAMPLES})


async def learned_sizes(history: UsageHistory) -> SizeBook:
    return learn(await history.recent_usage(HISTORY_STEPS))


Cost = Callable[[Usage, str], float]


class Forecast:
    """One debate's predictions while it runs. `cost(usage, model)` prices tokens; `models`
    names each planned call's model. A call started (or read back) leaves "the rest"."""

    def __init__(self, plan: Plan, *, models: Mapping[str, str], sizes: SizeBook,
                 cost: Cost, judging: frozenset[str] = frozenset(),
                 priced: Callable[[str], str] | None = None) -> None:
        self.calls = {c.key: c for c in plan.calls}
        self.judging = judging   # the phases that judge (or distil) what was argued
        self.models = dict(models)
        # the model a name asked is priced and sized as, asked at each prediction: once the
        # endpoint answers for a name, the rest of the debate is predicted with what answers
        self.priced = priced or (lambda model: model)
        self.sizes = sizes
        self.cost = cost
        self.stretch = 1.0   # how far this debate's replies ran past their typical size
        self._started: set[str] = set()

    def _size(self, model: str, kind: str) -> Size:
        """The high size, stretched by what this debate's replies have shown so far."""
        size = self.sizes.size(self.priced(model), kind)
        return Size(max(size.high.completion, math.ceil(size.typical.completion * self.stretch)),
                    max(size.high.prompt_ratio, size.typical.prompt_ratio * self.stretch))

    def call_usage(self, key: str, model: str, role: str, phase: str,
                   prompt_tokens: int) -> Usage:
        """This call at its high size, with its real prompt."""
        call = self.calls.get(key)
        kind = step_kind(call.role, call.phase) if call else step_kind(role, phase)
        return Usage(prompt_tokens=prompt_tokens,
                     completion_tokens=self._size(model, kind).completion)

    def output_cap(self, key: str, model: str, role: str, phase: str, effort: str | None,
                   completion_high: int) -> int:
        """The call's output cap: room over its high reply size (`completion_high`), and room
        for its visible reply plus the most hidden reasoning its model spends at `effort`."""
        call = self.calls.get(key)
        kind = step_kind(call.role, call.phase) if call else step_kind(role, phase)
        priced = self.priced(model)
        visible = self.sizes.size(priced, kind).visible_high
        if visible is not None:
            visible = max(visible, math.ceil(visible * self.stretch))
        return output_cap(completion_high, visible_high=visible,
                          reasoning_most=self.sizes.thinking.most(priced, effort))

    def is_judging(self, phase: str) -> bool:
        return phase in self.judging

    def rest_usd(self, key: str, phase: str) -> float:
        """The plan's calls not started yet, but `key`, at high sizes: what must stay covered
        after it. For an argument, everything after it, judging included; for a judging call, the
        rest of the judging (the arguments left are not made once the money is short)."""
        judging = self.is_judging(phase)
        total = 0.0
        for other, call in self.calls.items():
            if other == key or other in self._started or (judging
                                                           and not self.is_judging(call.phase)):
                continue
            model = self.models[other]
            size = self._size(model, step_kind(call.role, call.phase))
            total += self.cost(Usage(prompt_tokens=math.ceil(call.prompt_tokens
                                                             * size.prompt_ratio),
                                     completion_tokens=size.completion), self.priced(model))
        return total

    def start(self, key: str) -> None:
        """The call is under way or done (made, read back, taken from a cache)."""
        self._started.add(key)

    def observe(self, key: str, model: str, role: str, phase: str, usage: Usage,
                calls: int = 1, effort: str | None = None) -> None:
        """A reply arrived: a longer one than typical stretches the remaining predictions, and
        its hidden reasoning teaches what this model spends at `effort`."""
        if calls > 0:
            self.sizes.thinking.observe(self.priced(model), effort,
                                        usage.reasoning_tokens // calls)
        call = self.calls.get(key)
        kind = step_kind(call.role, call.phase) if call else step_kind(role, phase)
        typical = self.sizes.size(self.priced(model), kind).typical.completion
        if typical > 0 and calls > 0:
            ratio = usage.completion_tokens / calls / typical
            self.stretch = min(max(self.stretch, ratio), MAX_STRETCH)


def ceiling(usd_high: float, max_debate_usd: float | None, usd_at_caps: float = 0.0) -> float:
    """What one debate may hold at most: the operator's ceiling, or a multiple of its high
    estimate and never less than its whole plan with every reply at its output cap."""
    if max_debate_usd is not None:
        return max_debate_usd
    return max(CEILING_MULTIPLE * usd_high, usd_at_caps)


__all__ = [
    "CAP_CEILING",
    "CAP_FACTOR",
    "CAP_FLOOR",
    "CEILING_MULTIPLE",
    "REASONING_TOKENS",
    "Forecast",
    "Observed",
    "SizeBook",
    "StepSize",
    "Thinking",
    "UsageHistory",
    "ceiling",
    "learn",
    "learned_sizes",
    "output_cap",
    "prior",
    "step_kind",
]
