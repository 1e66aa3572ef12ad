"""What runs beside a debate in the service: the hooks told when it finishes (quick and local:
counting, handing a live sink over; what it owes the outside world is in the outbox, see
bot/service/delivery.py), and the sink that moves it to `judging` when a judging phase starts."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from engine.domain import Event, EventKind
from storage.errors import IllegalTransition, NotFound
from storage.records import DebateRecord, Review

log = logging.getLogger("dialectic.service")

FinishedHook = Callable[[DebateRecord, Review | None], Awaitable[None]]


async def run_finished_hooks(hooks: list[FinishedHook], record: DebateRecord,
                             review: Review | None) -> None:
    for hook in hooks:
        try:
            await hook(record, review)
        except Exception:  # a notifier failing must not undo a finished, stored debate
            log.exception("finished-hook %s failed for debate %s",
                          getattr(hook, "__name__", hook), record.id)


class JudgingSink:
    """Moves the debate to `judging` when one of its mode's judging phases starts."""

    def __init__(self, mark_judging: Callable[[str], Awaitable[None]], debate_id: str,
                 judging_phases: frozenset[str]) -> None:
        self.mark_judging = mark_judging
        self.debate_id = debate_id
        self.judging_phases = judging_phases

    async def emit(self, event: Event) -> None:
        if (event.kind is EventKind.PHASE_STARTED
                and event.data.get("phase") in self.judging_phases):
            try:
                await self.mark_judging(self.debate_id)
            except (IllegalTransition, NotFound) as exc:
                log.warning("could not mark %s judging: %s", self.debate_id, exc)


__all__ = ["FinishedHook", "JudgingSink", "run_finished_hooks"]
