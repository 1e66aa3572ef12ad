"""A debate's progress as the thread's status message shows it, folded from engine events.

Pure: the live sink feeds it engine events as they happen, `/debate status` feeds it the same
events read back from the audit chain, and both render through `bot.blocks.status`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.slack.views import common as B
from engine.debate import prepare
from engine.domain import DebateRequest
from engine.errors import DialecticError
from engine.protocols import PROTOCOLS
from engine.settings import EngineSettings
from storage.records import DebateRecord, DebateStatus


@dataclass(slots=True)
class Progress:
    """What the status message shows: the current phase, finished phases, cost so far."""

    planned: list[str] = field(default_factory=list)
    phase: str = ""
    done: list[str] = field(default_factory=list)
    cost_usd: float = 0.0
    status: DebateStatus | None = None  # from events; None leaves the record's own status
    judging: frozenset[str] = frozenset()  # the mode's judging phases, once the debate starts

    def apply(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Fold one event in; True when the status message would change."""
        if kind == "debate_started":
            self.status = DebateStatus.DEBATING
            self.judging = judging_phases(data.get("mode"))
        elif kind == "phase_started":
            self.phase = str(data.get("phase") or "")
            if self.phase in self.judging:
                self.status = DebateStatus.JUDGING
        elif kind == "phase_finished":
            name = str(data.get("phase") or "")
            if name and name not in self.done:
                self.done.append(name)
        elif kind == "step_finished":
            self.cost_usd += _number(data.get("cost_usd"))
        elif kind == "debate_finished":
            self.cost_usd = _number(data.get("cost_usd"), self.cost_usd)
            self.status = _status(data.get("status")) or self.status
        else:
            return False
        return True


def judging_phases(mode: Any) -> frozenset[str]:
    """The phases in which a debate of `mode` is judged, as its protocol declares them."""
    protocol = PROTOCOLS.get(str(mode))
    return protocol.judging_phases if protocol is not None else frozenset()


def _number(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _status(value: Any) -> DebateStatus | None:
    try:
        return DebateStatus(str(value))
    except ValueError:
        return None


def progress_from(events: Iterable[tuple[str, Mapping[str, Any]]], planned: list[str]
                  ) -> Progress:
    """Progress from (kind, data) pairs, oldest first (e.g. the debate's audit chain)."""
    progress = Progress(planned=list(planned))
    for kind, data in events:
        progress.apply(kind, data)
    return progress


def planned_phases(settings: EngineSettings, request: DebateRequest) -> list[str]:
    """The phases the debate's plan goes through, in order; [] if the plan cannot be built."""
    try:
        plan = prepare(settings, request).plan
    except DialecticError:
        return []
    phases: list[str] = []
    for call in sorted(plan.calls, key=lambda c: c.depth):
        if call.phase not in phases:
            phases.append(call.phase)
    return phases


def render(record: DebateRecord, progress: Progress, *, rehearsal: bool,
           transcript_url: str | None, final: bool = False) -> B.Message:
    """The status message. `final` trusts the record (finished, stored) over the events."""
    status = record.status if final or progress.status is None else progress.status
    cost = record.cost_usd if final and record.cost_usd else progress.cost_usd
    phase = "done" if final and record.status is not DebateStatus.QUEUED else progress.phase
    shown = record.model_copy(update={"status": status})
    return B.status(shown, phase=phase, done_phases=list(progress.done),
                    planned_phases=list(progress.planned),
                    cost_usd=cost, rehearsal=rehearsal, transcript_url=transcript_url)


__all__ = ["Progress", "judging_phases", "planned_phases", "progress_from", "render"]
