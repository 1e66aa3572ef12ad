"""Planning a debate without running it: resolve a request's preset, mode, judges and plan
(`prepare`), and price the plan (`estimate_for`).

Estimates, `dialectic presets`, the service's checks and progress read this; it loads neither the
provider client nor the statistics a judging phase computes (engine/core/debate.py runs the plan).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

from engine.core.presets import judges_for, resolve_preset
from engine.domain import DebateRequest, Estimate, Plan
from engine.errors import InvalidRequest
from engine.money.answering import STAND_IN
from engine.money.cost import estimate
from engine.money.sizing import SizeBook
from engine.money.step_models import plan_models
from engine.money.windows import misfit, misfit_message
from engine.options import check_models
from engine.protocols import DebateProtocol, PlanInput, get_protocol
from engine.settings import EngineSettings, JudgeSpec, PresetSpec
from engine.vocabulary import Mode


@dataclass(frozen=True, slots=True)
class Prepared:
    request: DebateRequest
    preset: PresetSpec
    protocol: DebateProtocol
    judges: tuple[JudgeSpec, ...]
    plan: Plan


def prepare(settings: EngineSettings, request: DebateRequest) -> Prepared:
    """Resolve preset, mode and judges; raise `InvalidRequest` with a message fit for the user."""
    topic = request.topic.strip()
    if not topic:
        raise InvalidRequest("the topic is empty: say what to debate")
    if len(topic) > settings.max_topic_chars:
        raise InvalidRequest(
            f"the topic is {len(topic)} characters; the limit is {settings.max_topic_chars}"
        )
    preset = resolve_preset(settings, request.preset)
    mode = request.mode if "mode" in request.model_fields_set else Mode(preset.mode)
    protocol = get_protocol(mode)
    judges = judges_for(settings, preset, request.judges)
    rounds = request.rounds if request.rounds is not None else preset.rounds
    request = request.model_copy(update={"topic": topic, "mode": mode, "rounds": rounds})
    check_models(request.options, settings.price_quote, settings.configured_models(),
                 settings.model_problem)
    plan = protocol.plan(PlanInput(rounds=rounds, judges=judges, preset=preset,
                                   options=request.options, judges_requested=request.judges,
                                   topic=topic, context=request.context))
    _fits_windows(settings, request, plan)
    return Prepared(request, preset, protocol, judges, plan)


def _fits_windows(settings: EngineSettings, request: DebateRequest, plan: Plan) -> None:
    """Refuse, before anything is spent, a plan a model's configured context window cannot
    hold (a 4k local server and a red team)."""
    windows = settings.windows()
    if not windows or settings.is_rehearsal:
        return
    found = misfit(plan, plan_models(settings, request.options, plan), windows)
    if found is None:
        return
    raise InvalidRequest(misfit_message(request.mode, found))


def estimate_for(settings: EngineSettings, prepared: Prepared,
                 sizes: SizeBook | None = None, reused: Iterable[str] = (), *,
                 max_debate_usd: float | None = None) -> Estimate:
    """What the plan will cost, typical to verbose (`sizes`: what recent debates' replies
    were; the prior without): each call priced with the model it will really use (the request's
    override, a judge's or panelist's own, the role's), or rather the model that answers for it
    (`EngineSettings.priced_model`: a deployment's real model, a pessimistic stand-in for a name
    nobody has answered for yet); `reused` calls (a replay's unchanged
    steps) cost nothing. `max_debate_usd`: the operator's per-debate ceiling.

    Memoised (`_ESTIMATES`): the same plan, models, settings and size book priced again (every
    `/debate` of a burst, before its ack) is the figure already computed."""
    asked = plan_models(settings, prepared.request.options, prepared.plan)
    reused = frozenset(reused)
    key = _EstimateKey(id(settings), settings.answers.version, id(sizes),
                       None if sizes is None else sizes.thinking.version, prepared.plan,
                       tuple(asked.items()), reused, max_debate_usd)
    kept = _ESTIMATES.get(key)
    if kept is not None and kept[0] is settings and kept[1] is sizes:
        return kept[2]
    found = _estimate(settings, prepared.plan, asked, sizes, reused, max_debate_usd)
    if len(_ESTIMATES) >= MEMO_SIZE:
        _ESTIMATES.clear()
    _ESTIMATES[key] = (settings, sizes, found)   # held: their ids are in the key
    return found


def _estimate(settings: EngineSettings, plan: Plan, asked: dict[str, str],
              sizes: SizeBook | None, reused: frozenset[str],
              max_debate_usd: float | None) -> Estimate:
    models = {key: settings.priced_model(model) for key, model in asked.items()}
    sizes = replace(sizes or SizeBook(), effort_for=settings.effort_for)
    found = estimate(plan, model_for=models.__getitem__, price_for=settings.price_for,
                     sizes=sizes, rehearsal=settings.is_rehearsal, reused=reused,
                     max_debate_usd=max_debate_usd)
    stand_ins = sorted({asked[k] for k, m in models.items() if m == STAND_IN != asked[k]})
    if not stand_ins:
        return found
    return found.model_copy(update={"stand_ins": stand_ins, "stand_in": STAND_IN})


class _EstimateKey(NamedTuple):
    """What an estimate is a function of. Settings are priced by identity (a copy, or new
    settings, is another key) and the version of their book of answering models; a size book by
    identity (the service makes a new one when it learns sizes) and the version of its hidden
    reasoning figures; the plan by value (its calls' models, roles and priced sizes)."""

    settings: int
    answers: int
    sizes: int
    thinking: int | None
    plan: Plan
    models: tuple[tuple[str, str], ...]
    reused: frozenset[str]
    max_debate_usd: float | None


#: how many estimates are kept (emptied when full: a burst asks for a handful of plans)
MEMO_SIZE = 256
_ESTIMATES: dict[_EstimateKey, tuple[EngineSettings, SizeBook | None, Estimate]] = {}


def check_request(settings: EngineSettings, request: DebateRequest) -> None:
    """Validate without building anything (raises InvalidRequest)."""
    prepare(settings, request)


__all__ = ["Prepared", "check_request", "estimate_for", "prepare"]
