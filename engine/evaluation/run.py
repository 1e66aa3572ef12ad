"""One evaluation item in one mode, through the engine: the baselines (`single`, one call
answering directly; `vote`, K independent samples and their majority) run as keyed steps of a
`DebateContext` (so checkpoints, the purse, the gateway and events apply as to any debate);
the debate modes run as debates, and their answer is read from what each mode ends with
(panel's synthesis, critique's final answer, redteam's decision, consensus's winner on a yes/no
question).

What a model or the dataset wrote is data here: the question reaches the models inside the
spotlight's untrusted region, as a debate's topic does.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from engine.core import prompts
from engine.core.presets import resolve_preset
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import DebateRequest, DebateResult, Plan, PlannedCall
from engine.errors import InvalidRequest
from engine.evaluation.answers import is_correct, majority, normalise
from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.limits import (
    BASELINES,
    DEBATE_EVAL_MODES,
    DEFAULT_MODES,
    EVAL_MODES,
    SINGLE,
)
from engine.evaluation.report import ItemOutcome
from engine.money.cost import token_bound
from engine.options import DebateOptions
from engine.ports import CheckpointStore, EventSink, NoEvidence, Purse
from engine.provider.llm import LLMClient, Prompt
from engine.reading import verdicts
from engine.reading.outcomes import ConsensusOutcome, CritiqueOutcome, PanelOutcome, RedTeamOutcome
from engine.schemas.base import StrictReply
from engine.settings import EngineSettings
from engine.vocabulary import Mode, Side, StepStatus

DEBATE_MODES: dict[str, Mode] = {name: Mode(name) for name in DEBATE_EVAL_MODES}
ANSWER_ROLE = "answerer"
ANSWER_PHASE = "answer"
# what a baseline call is planned at, before the sizes of real replies are known
_ANSWER_COMPLETION_TOKENS = 250
_ANSWER_OVERHEAD_TOKENS = 220

ANSWERER = "a careful expert who answers questions exactly"
TASK = ("Work the question out in a few sentences in `reasoning`, then give the final answer "
        "alone in `answer`: a number as digits, a choice by its text, yes or no for a yes/no "
        "question, or the shortest phrase that answers it.")


class DirectAnswer(StrictReply):
    """A baseline's reply: the working, then the final answer alone."""

    reasoning: str = Field(description="your working, in a few sentences")
    answer: str = Field(min_length=1, description="the final answer alone")


@dataclass(frozen=True, slots=True)
class Answered:
    """What one item in one mode produced before it is scored."""

    text: str | None                 # the raw answer, None when the mode gave none
    normalised: str | None
    tie: bool = False
    error: str | None = None


def check_modes(modes: Sequence[str], dataset: Dataset) -> tuple[str, ...]:
    """The modes in order without repeats; raises InvalidRequest naming what is wrong."""
    unknown = [m for m in modes if m not in EVAL_MODES]
    if unknown:
        raise InvalidRequest(f"unknown evaluation mode {unknown[0]!r}; choose from "
                             f"{', '.join(EVAL_MODES)}")
    if not modes:
        raise InvalidRequest("no modes given; choose from " + ", ".join(EVAL_MODES))
    if "consensus" in modes and not all(yes_no(item) for item in dataset.items):
        raise InvalidRequest("consensus answers yes or no: every answer of the dataset must be "
                             "yes or no to evaluate it (try --builtin decisions)")
    return tuple(dict.fromkeys(modes))


def yes_no(item: Item) -> bool:
    return item.choices is None and normalise(item.answer, item) in ("yes", "no") \
        and item.answer.strip().casefold() in ("yes", "no", "true", "false")


def question_text(item: Item) -> str:
    """The question as the models read it, with its choices lettered."""
    if not item.choices:
        return item.question
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return item.question + "\n" + "\n".join(
        f"{letters[i]}. {choice}" for i, choice in enumerate(item.choices))


def answer_prompt(ctx: DebateContext, item: Item) -> Prompt:
    """A baseline's prompt: the question spotlighted as untrusted material."""
    return prompts.role(ctx.spotlight, ANSWERER, question_text(item), TASK)


def step_key(mode: str, sample: int = 0) -> str:
    return f"eval/{mode}" if mode == SINGLE else f"eval/{mode}/{sample}"


def baseline_models(mode: str, samples: int, models: Sequence[str]) -> list[str | None]:
    """The model of each call: single the first named; a vote's samples go round the list."""
    calls = 1 if mode == SINGLE else samples
    if not models:
        return [None] * calls
    return [models[0]] if mode == SINGLE else [models[i % len(models)] for i in range(calls)]


def baseline_plan(item: Item, mode: str, samples: int, models: Sequence[str]) -> Plan:
    prompt = _ANSWER_OVERHEAD_TOKENS + token_bound(question_text(item))
    calls = tuple(PlannedCall(key=step_key(mode, i), role=ANSWER_ROLE, phase=ANSWER_PHASE,
                              depth=1, prompt_tokens=prompt,
                              completion_tokens=_ANSWER_COMPLETION_TOKENS, model=model)
                  for i, model in enumerate(baseline_models(mode, samples, models)))
    return Plan(mode=Mode.PANEL, calls=calls)


def baseline_context(settings: EngineSettings, *, carrier_id: str, item: Item, plan: Plan,
                     llm: LLMClient, store: CheckpointStore, sink: EventSink,
                     purse: Purse | None, nonce: str) -> DebateContext:
    """The context a baseline's calls run in: the default preset's settings, no judges, the
    question as its topic (spotlighted, screened as any request is)."""
    request = DebateRequest(topic=question_text(item), mode=Mode.PANEL, requested_by="eval",
                            spotlight_nonce=nonce)
    return DebateContext(debate_id=carrier_id, request=request,
                         preset=resolve_preset(settings, None), judges=(), settings=settings,
                         llm=llm, store=store, sink=sink, evidence=NoEvidence(),
                         statistics=verdicts, step_cache=None, purse=purse, plan=plan)


async def run_baseline(ctx: DebateContext, item: Item, mode: str, *, samples: int,
                       models: Sequence[str], rng: random.Random) -> Answered:
    """`single`: one call. `vote`: `samples` calls at once, the majority of their normalised
    answers (a tie drawn with `rng`, and said)."""
    prompt = answer_prompt(ctx, item)
    async with ctx.phase(ANSWER_PHASE):
        steps = await asyncio.gather(*(
            ctx.step(step_key(mode, i), role=ANSWER_ROLE, prompt=prompt, schema=DirectAnswer,
                     model=model)
            for i, model in enumerate(baseline_models(mode, samples, models))))
    await ctx.events.flush()   # the phase's end (held for a next event: there is none)
    texts = [s.value.answer if s.value is not None else None for s in steps]
    failed = [s for s in steps if s.value is None]
    if mode == SINGLE:
        text = texts[0]
        return Answered(text, normalise(text, item) if text else None,
                        error=_why(failed[0]) if failed else None)
    answer, tie = majority([normalise(t, item) if t else None for t in texts], rng)
    error = None if answer is not None else (
        _why(failed[0]) if failed else "no sample gave a usable answer")
    return Answered(answer, answer, tie=tie, error=error)


def _why(step: StepOutcome[DirectAnswer]) -> str:
    if step.status is StepStatus.REFUSED:
        return f"refused: {step.record.error}"
    if step.status is StepStatus.FILTERED:
        return "withheld by the content filter"
    return f"degraded: {step.record.error or 'the call did not finish'}"


def debate_request(item: Item, mode: str, models: Sequence[str]) -> DebateRequest:
    """The debate one item is put to: its question as the topic; panelists take the named
    models in turn."""
    options = DebateOptions()
    if mode == "panel" and len(models) > 1:
        options = DebateOptions(models=tuple(models), panelists=len(models))
    return DebateRequest(topic=question_text(item), mode=DEBATE_MODES[mode], options=options,
                         requested_by="eval", no_cache=True)


def debate_answer(result: DebateResult) -> str | None:
    """The answer a finished debate gives (None: it ended without one)."""
    outcome = result.outcome
    if isinstance(outcome, PanelOutcome) and outcome.synthesis is not None:
        return outcome.synthesis.answer
    if isinstance(outcome, CritiqueOutcome) and outcome.final is not None:
        return outcome.final.answer
    if isinstance(outcome, RedTeamOutcome) and outcome.synthesis is not None:
        return outcome.synthesis.decision
    if isinstance(outcome, ConsensusOutcome) or result.mode is Mode.CONSENSUS:
        return {Side.PRO: "yes", Side.CON: "no"}.get(result.winner) if result.winner else None
    return None


def debate_answered(item: Item, result: DebateResult) -> Answered:
    text = debate_answer(result)
    if text is None:
        why = result.error or (result.missing[0] if result.missing else "no answer")
        return Answered(None, None, error=f"no answer: {why}"[:500])
    normalised = normalise(text, item)
    error = None if result.complete else ("incomplete: " + "; ".join(result.missing))[:500]
    return Answered(text, normalised, error=error)


def scored(item: Item, answered: Answered, *, cost_usd: float, calls: int, tokens: int,
           seconds: float) -> ItemOutcome:
    """The item's outcome: an item without a usable answer counts as wrong."""
    correct = answered.normalised is not None and is_correct(answered.normalised, item)
    return ItemOutcome(item_id=item.id, answer=answered.normalised, correct=correct,
                       tie=answered.tie, cost_usd=round(cost_usd, 8), calls=calls,
                       tokens=tokens, seconds=round(seconds, 3), error=answered.error)


__all__ = ["BASELINES", "DEBATE_MODES", "DEFAULT_MODES", "EVAL_MODES", "Answered",
           "DirectAnswer", "baseline_context", "baseline_plan", "check_modes", "debate_answer",
           "debate_answered",
           "debate_request", "run_baseline", "scored"]
