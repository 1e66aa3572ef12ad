"""A debate's progress, folded from its events: what the Slack status message and the terminal
panel show.

Pure. A live sink feeds it engine events as they happen; `/debate status` feeds it the
(kind, data) pairs read back from the audit chain, which may span several runs of a resumed
debate. Every surface renders the same fold, so it is honest everywhere: a phase in which no
step succeeded is failed, a phase with degraded or filtered steps says how many are missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.core.planning import prepare
from engine.domain import DebateRequest, Event, EventKind, Plan
from engine.errors import DialecticError
from engine.protocols import PROTOCOLS
from engine.settings import EngineSettings
from engine.vocabulary import StepStatus
from storage.records import DebateStatus

NOTES_KEPT = 20


class PhaseState(StrEnum):
    """Where a phase stands; the last three are finished."""

    PENDING = "pending"    # planned, not started
    RUNNING = "running"
    DONE = "done"          # finished; every step has an output
    PARTIAL = "partial"    # finished; some steps are missing (degraded, filtered or refused)
    FAILED = "failed"      # finished, or stopped with the debate, without one step succeeding


FINISHED = frozenset({PhaseState.DONE, PhaseState.PARTIAL, PhaseState.FAILED})
#: A debate ended so: a planned phase it never started was skipped (its inputs had all failed,
#: engine/protocols) or cut off, and reads "not run", never as still to come.
UNSUCCESSFUL = frozenset({DebateStatus.FAILED, DebateStatus.TIMED_OUT})


@dataclass(frozen=True, slots=True)
class PhaseView:
    """One phase as the surfaces show it."""

    name: str
    state: PhaseState
    succeeded: int = 0
    missing: int = 0
    stopped: bool = False  # the debate ended while this phase ran
    not_run: bool = False  # the debate failed before it: skipped, nothing it could use

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def detail(self) -> str:
        """"", "2 missing", "nothing succeeded", "stopped", "not run": the words after the
        phase's name."""
        if self.not_run:
            return "not run"
        if self.state is PhaseState.FAILED:
            return "stopped, nothing succeeded" if self.stopped else "nothing succeeded"
        if self.state is PhaseState.PARTIAL:
            return f"{self.missing} missing" if self.missing else "stopped"
        return ""


@dataclass(slots=True)
class _Phase:
    started: bool = False
    finished: bool = False
    stopped: bool = False


@dataclass(slots=True)
class Progress:
    """The fold's state. `apply` folds one event in; `phases()` and the fields read it."""

    planned: list[str] = field(default_factory=list)
    planned_calls: int = 0
    topic: str = ""
    mode: str = ""
    current: str = ""                                   # the phase last started
    cost_usd: float = 0.0
    status: DebateStatus | None = None                  # None: the events said nothing yet
    judging: frozenset[str] = frozenset()               # the mode's judging phases
    notes: list[str] = field(default_factory=list)      # retries, degraded and filtered steps
    runs: dict[str, _Phase] = field(default_factory=dict, init=False, repr=False)
    steps: dict[str, tuple[str, StepStatus]] = field(  # step key -> its phase, how it ended
        default_factory=dict, init=False, repr=False)

    def apply_event(self, event: Event) -> bool:
        """Fold in one engine event; True when what the surfaces show changed."""
        return self.apply(event.kind.value, event.data)

    def apply(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Fold in one (kind, data) pair; True when what the surfaces show changed."""
        handler = _HANDLERS.get(kind)
        if handler is None:
            return False
        handler(self, data)
        return True

    # --- reading ---

    def phases(self) -> list[PhaseView]:
        """The planned phases in plan order, then any other phase the debate went through."""
        names = [*self.planned, *(p for p in self.runs if p not in self.planned)]
        return [self._view(name) for name in names]

    @property
    def calls_done(self) -> int:
        """Calls that ended, one way or another (each step key once, across resumed runs)."""
        return len(self.steps)

    @property
    def calls_missing(self) -> int:
        """Calls that ended without an output (degraded, filtered or refused)."""
        return sum(1 for _, how in self.steps.values() if how is not StepStatus.OK)

    def calls_text(self) -> str:
        """`calls 7/10`, saying how many gave nothing: `calls 5/5, 5 missing`."""
        planned = f"/{self.planned_calls}" if self.planned_calls else ""
        missing = f", {self.calls_missing} missing" if self.calls_missing else ""
        return f"calls {self.calls_done}{planned}{missing}"

    @property
    def finished_phases(self) -> int:
        return sum(1 for p in self.phases() if p.finished)

    def _view(self, name: str) -> PhaseView:
        run = self.runs.get(name)
        if (run is None or not run.started) and self.status in UNSUCCESSFUL:
            return PhaseView(name, PhaseState.FAILED, not_run=True)   # never pending now
        if run is None or not run.started:
            return PhaseView(name, PhaseState.PENDING)
        outcomes = [how for phase, how in self.steps.values() if phase == name]
        ok = sum(1 for how in outcomes if how is StepStatus.OK)
        missing = len(outcomes) - ok
        if not run.finished:
            return PhaseView(name, PhaseState.RUNNING, ok, missing)
        if ok == 0 and (missing or run.stopped):
            state = PhaseState.FAILED
        elif missing or run.stopped:
            state = PhaseState.PARTIAL
        else:
            state = PhaseState.DONE
        return PhaseView(name, state, ok, missing, run.stopped)

    # --- folding, one method per event kind ---

    def _debate_started(self, data: Mapping[str, Any]) -> None:
        self.status = DebateStatus.DEBATING
        self.topic = str(data.get("topic") or self.topic)
        self.mode = str(data.get("mode") or self.mode)
        self.judging = judging_phases(self.mode)

    def _phase_started(self, data: Mapping[str, Any]) -> None:
        self.current = str(data.get("phase") or "")
        self.runs[self.current] = _Phase(started=True)  # a resumed run starts it again
        if self.current in self.judging:
            self.status = DebateStatus.JUDGING

    def _phase_finished(self, data: Mapping[str, Any]) -> None:
        name = str(data.get("phase") or "")
        run = self.runs.setdefault(name, _Phase())
        run.started = run.finished = True
        # the phase's own account wins: a stored step read back may be filtered or not fit
        for key in data.get("degraded") or ():
            self.steps[str(key)] = (name, StepStatus.DEGRADED)
        for key in data.get("filtered") or ():
            self.steps[str(key)] = (name, StepStatus.FILTERED)
        for key in data.get("refused") or ():
            self.steps[str(key)] = (name, StepStatus.REFUSED)

    def _step_finished(self, data: Mapping[str, Any]) -> None:
        self._step(data, StepStatus.OK)
        self.cost_usd += _number(data.get("cost_usd"))

    def _step_reused(self, data: Mapping[str, Any]) -> None:
        known = self.steps.get(str(data.get("key") or ""))
        withheld = known is not None and known[1] in (StepStatus.FILTERED, StepStatus.REFUSED)
        self._step(data, known[1] if known is not None and withheld else StepStatus.OK)

    def _step_degraded(self, data: Mapping[str, Any]) -> None:
        self._missing(data, StepStatus.DEGRADED)

    def _step_filtered(self, data: Mapping[str, Any]) -> None:
        self._missing(data, StepStatus.FILTERED)

    def _step_refused(self, data: Mapping[str, Any]) -> None:
        self._missing(data, StepStatus.REFUSED)

    def _step_retry(self, data: Mapping[str, Any]) -> None:
        self._note(f"retry {data.get('key', '?')} #{data.get('attempt', '?')}: "
                   f"{data.get('reason', '')}")

    def _debate_finished(self, data: Mapping[str, Any]) -> None:
        self.cost_usd = _number(data.get("cost_usd"), self.cost_usd)
        self.status = _status(data.get("status")) or self.status
        for run in self.runs.values():
            if run.started and not run.finished:
                run.finished = run.stopped = True

    def _step(self, data: Mapping[str, Any], how: StepStatus) -> None:
        key = str(data.get("key") or f"#{len(self.steps)}")
        known = self.steps.get(key)
        phase = str(data.get("phase") or (known[0] if known else self.current))
        self.steps[key] = (phase, how)

    def _missing(self, data: Mapping[str, Any], how: StepStatus) -> None:
        self._step(data, how)
        reason = data.get("reason")
        self._note(f"{how.value}: {data.get('key', '?')}" + (f" — {reason}" if reason else ""))

    def _note(self, text: str) -> None:
        self.notes = [*self.notes, text][-NOTES_KEPT:]


_HANDLERS: dict[str, Callable[[Progress, Mapping[str, Any]], None]] = {
    EventKind.DEBATE_STARTED.value: Progress._debate_started,
    EventKind.PHASE_STARTED.value: Progress._phase_started,
    EventKind.PHASE_FINISHED.value: Progress._phase_finished,
    EventKind.STEP_FINISHED.value: Progress._step_finished,
    EventKind.STEP_REUSED.value: Progress._step_reused,
    EventKind.STEP_DEGRADED.value: Progress._step_degraded,
    EventKind.STEP_FILTERED.value: Progress._step_filtered,
    EventKind.STEP_REFUSED.value: Progress._step_refused,
    EventKind.STEP_RETRY.value: Progress._step_retry,
    EventKind.DEBATE_FINISHED.value: Progress._debate_finished,
}


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


# --------------------------------------------------------------------------------------------
# starting points


def judging_phases(mode: Any) -> frozenset[str]:
    """The phases in which a debate of `mode` is judged, as its protocol declares them."""
    protocol = PROTOCOLS.get(str(mode))
    return protocol.judging_phases if protocol is not None else frozenset()


def phases_of(plan: Plan) -> list[str]:
    """The phases a plan goes through, in the order its calls depend on each other."""
    phases: list[str] = []
    for call in sorted(plan.calls, key=lambda c: c.depth):
        if call.phase not in phases:
            phases.append(call.phase)
    return phases


def progress_for_plan(plan: Plan, *, topic: str = "") -> Progress:
    """An empty fold that knows the debate's plan: its phases, calls and mode."""
    return Progress(planned=phases_of(plan), planned_calls=len(plan.calls), topic=topic,
                    mode=str(plan.mode), judging=judging_phases(plan.mode))


def progress_for(settings: EngineSettings, request: DebateRequest) -> Progress:
    """An empty fold for a request; without a plan when none can be built (bad preset)."""
    try:
        plan = prepare(settings, request).plan
    except DialecticError:
        return Progress(topic=request.topic, mode=str(request.mode))
    return progress_for_plan(plan, topic=request.topic)


def progress_from(events: Iterable[tuple[str, Mapping[str, Any]]], start: Progress | None = None
                  ) -> Progress:
    """The fold over (kind, data) pairs, oldest first (e.g. a debate's audit chain)."""
    progress = start if start is not None else Progress()
    for kind, data in events:
        progress.apply(kind, data)
    return progress


__all__ = [
    "FINISHED",
    "PhaseState",
    "PhaseView",
    "Progress",
    "judging_phases",
    "phases_of",
    "progress_for",
    "progress_for_plan",
    "progress_from",
]
