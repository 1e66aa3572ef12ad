"""The terminal face of a debate: live phase-by-phase progress (rich), then a summary."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from engine.domain import DebateResult, Estimate, Event, EventKind

REHEARSAL_NOTE = "REHEARSAL — offline placeholder model: not a real debate. Set OPENAI_API_KEY."


class Progress:
    """Folds engine events into a small table of phases, refreshed live."""

    def __init__(self, planned_calls: int, rehearsal: bool) -> None:
        self.planned = planned_calls
        self.rehearsal = rehearsal
        self.phases: dict[str, str] = {}
        self.done_calls = 0
        self.cost = 0.0
        self.notes: list[str] = []

    def apply(self, event: Event) -> None:
        data = event.data
        if event.kind is EventKind.PHASE_STARTED:
            self.phases[data["phase"]] = "running"
        elif event.kind is EventKind.PHASE_FINISHED:
            problems = len(data.get("degraded", [])) + len(data.get("filtered", []))
            self.phases[data["phase"]] = "done" + (f" ({problems} missing)" if problems else "")
        elif event.kind in (EventKind.STEP_FINISHED, EventKind.STEP_REUSED):
            self.done_calls += 1
            self.cost += float(data.get("cost_usd", 0.0))
        elif event.kind in (EventKind.STEP_DEGRADED, EventKind.STEP_FILTERED):
            self.done_calls += 1
            self.notes.append(f"{event.kind.value}: {data.get('key')} — {data.get('reason', '')}")
        elif event.kind is EventKind.STEP_RETRY:
            self.notes.append(f"retry {data.get('key')} #{data.get('attempt')}: "
                              f"{data.get('reason')}")

    def render(self) -> Panel:
        table = Table.grid(padding=(0, 2))
        for name, state in self.phases.items():
            mark = "✓" if state.startswith("done") else "…"
            table.add_row(mark, name, state)
        table.add_row("", f"calls {self.done_calls}/{self.planned}", f"${self.cost:.4f}")
        for note in self.notes[-4:]:
            table.add_row("!", Text(note, style="yellow"), "")
        title = "Debate" + (" [REHEARSAL]" if self.rehearsal else "")
        return Panel(table, title=title)


async def run_with_progress(console: Console, queue: asyncio.Queue[Event],
                            work: Awaitable[DebateResult], planned_calls: int,
                            rehearsal: bool) -> DebateResult:
    """Await `work` while showing its events; returns its result."""
    progress = Progress(planned_calls, rehearsal)
    task = asyncio.ensure_future(work)
    with Live(progress.render(), console=console, refresh_per_second=8, transient=False) as live:
        while not task.done() or not queue.empty():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=0.1)
            except TimeoutError:
                continue
            progress.apply(event)
            live.update(progress.render())
    return await task


def _say(console: Console, text: str, style: str | None = None) -> None:
    """Print model or user text literally: rich markup inside it is never interpreted."""
    console.print(Text(text, style=style or ""), highlight=False)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_summary(console: Console, result: DebateResult) -> None:
    if result.rehearsal:
        _say(console, REHEARSAL_NOTE, "bold yellow")
    style = "green" if result.status == "completed" else "red"
    _say(console, f"{result.status.upper()} — {result.topic}", f"bold {style}")
    _say(console, f"Verdict: {result.verdict or 'none'}")
    if result.rationale:
        _say(console, f"Rationale: {result.rationale}")
    c = result.consensus
    if c is not None:
        interval = (f" [{c.alpha_interval[0]:.2f}, {c.alpha_interval[1]:.2f}]"
                    if c.alpha_interval else "")
        _say(console, f"Alpha {_fmt(c.alpha)}{interval}  kappa {_fmt(c.kappa)}  band {c.band}  "
                      f"routing {result.routing}" + ("  IRRECONCILABLE" if c.irreconcilable
                                                     else ""))
    _print_points(console, "Agreements", result.divergence.agreements[:5])
    _print_points(console, "Disagreements", result.divergence.disagreements[:3])
    for key, value in list(result.outcome_details().items())[:6]:
        _say(console, f"{key}: {str(value)[:300]}")
    if result.missing:
        _say(console, "Incomplete — missing:", "bold red")
        for item in result.missing:
            _say(console, f"  - {item}")
    cost = result.cost
    _say(console, f"Cost ${cost.usd:.4f} ({cost.prompt_tokens} prompt + {cost.completion_tokens} "
                  f"completion tokens, {cost.calls} calls, {cost.reused_calls} reused)  "
                  f"time {result.elapsed_seconds:.1f} s")


def _print_points(console: Console, title: str, points: list) -> None:  # type: ignore[type-arg]
    if not points:
        return
    _say(console, f"{title}:")
    for p in points:
        _say(console, f"  - {p.label or p.item}  (mean {p.mean:.1f}, spread {p.spread:.1f})")


def print_estimate(console: Console, estimate: Estimate) -> None:
    if estimate.rehearsal:
        _say(console, REHEARSAL_NOTE, "bold yellow")
    roles = ", ".join(f"{role} {n}" for role, n in sorted(estimate.calls_per_role.items()))
    _say(console, f"Mode {estimate.mode}: {estimate.calls} calls ({roles}), "
                  f"{estimate.depth} dependent rounds")
    _say(console, f"Tokens ~{estimate.prompt_tokens} prompt + ~{estimate.completion_tokens} "
                  f"completion; estimated cost ${estimate.usd:.4f}")
