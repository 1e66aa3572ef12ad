"""Whether a plan fits its models' context windows: a local server with a 4k window cannot hold a
judge's transcript, and saying so before the debate starts spends nothing (a call cut at the
window is paid for and lost). A call needs its prompt (the plan's size, grown as replies carried
into later prompts grow: the typical ratio of `sizing`) and room for a long reply (twice the
planned one)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from engine.domain import Plan, PlannedCall
from engine.money.sizing import PRIOR_PROMPT_RATIO

REPLY_ROOM = 2   # times the planned reply


class Misfit(NamedTuple):
    """The planned call that least fits its model's window."""

    key: str
    model: str
    need: int
    window: int


def context_need(call: PlannedCall) -> int:
    """The tokens of context `call` needs: its prompt, grown, and room for a long reply."""
    return math.ceil(call.prompt_tokens * PRIOR_PROMPT_RATIO[0]) + REPLY_ROOM * \
        call.completion_tokens


def misfit(plan: Plan, models: Mapping[str, str], windows: Mapping[str, int]) -> Misfit | None:
    """The call whose need exceeds its model's known window the most, or None when all fit."""
    worst: Misfit | None = None
    for call in plan.calls:
        model = models.get(call.key, "")
        window = windows.get(model)
        need = context_need(call)
        if window is not None and need > window and (
                worst is None or need - window > worst.need - worst.window):
            worst = Misfit(call.key, model, need, window)
    return worst


def plan_need(plan: Plan, models: Mapping[str, str], model: str) -> int:
    """The most context any of `model`'s calls in `plan` needs (0: it makes none)."""
    return max((context_need(c) for c in plan.calls if models.get(c.key) == model), default=0)


def misfit_message(mode: str, found: Misfit) -> str:
    """One line for a plan a window cannot hold, with what to do."""
    return (f"{mode} needs about {found.need:,} tokens of context for {found.key} (its prompt "
            f"and reply); {found.model} has a {found.window:,}-token window (context_windows): "
            f"choose a mode with shorter prompts, or a model with a larger window")
