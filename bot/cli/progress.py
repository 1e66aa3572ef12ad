"""The terminal face of a debate: the progress panel (rich), then the summary and the estimate.

The panel renders the service's progress fold (`bot.service.progress`), the same one the Slack
status message renders. On a terminal it is live; piped or redirected, it is printed once,
when the debate ends, and ends with a newline like any other output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bot.cli.outcomes import print_line, print_outcome, print_preset
from bot.service.progress import PhaseState, PhaseView, Progress, progress_for_plan
from bot.service.results import (
    FLAG_MEANING,
    alpha_text,
    band_rule,
    flag_headline,
    point_figures,
    routing_sentence,
)
from bot.service.words import counted, interval_text, plain_value
from engine.domain import DebateResult, DivergencePoint, Estimate, Event, Plan
from engine.money.cost import (
    ceiling_note,
    estimate_range,
    reuse_note,
    stand_in_note,
    token_details,
    usd,
)
from engine.settings import ThresholdSpec
from engine.vocabulary import ResultStatus

REHEARSAL_NOTE = "REHEARSAL — offline placeholder model: not a real debate. Set OPENAI_API_KEY."
TITLE_TOPIC_MAX = 60
NOTES_SHOWN = 4
#: An outcome field's share of the summary; longer ones end in "…" and `--json` prints them whole.
OUTCOME_VALUE_MAX = 300
WHOLE_HINT = "(… shortened here; --json prints every field whole)"
LABEL_MAX = 200
MARKS = {PhaseState.PENDING: ("·", "dim"), PhaseState.RUNNING: ("…", "cyan"),
         PhaseState.DONE: ("✓", "green"), PhaseState.PARTIAL: ("⚠", "yellow"),
         PhaseState.FAILED: ("✗", "red")}


# --------------------------------------------------------------------------------------------
# the progress panel


def _title(progress: Progress, rehearsal: bool) -> Text:
    """"Should we adopt X? · consensus [REHEARSAL]": the topic as text, never as markup."""
    topic = " ".join(progress.topic.split()) or "Debate"
    if len(topic) > TITLE_TOPIC_MAX:
        topic = topic[:TITLE_TOPIC_MAX - 1] + "…"
    parts = [topic, progress.mode] if progress.mode else [topic]
    return Text(" · ".join(parts) + (" [REHEARSAL]" if rehearsal else ""))


def _state_words(phase: PhaseView) -> str:
    if phase.state is PhaseState.PENDING:
        return ""
    return phase.detail or phase.state.value


def panel(progress: Progress, *, rehearsal: bool) -> Panel:
    """The phases with their state, calls done of planned, cost so far, the latest notes."""
    table = Table.grid(padding=(0, 2))
    for phase in progress.phases():
        mark, style = MARKS[phase.state]
        table.add_row(Text(mark, style=style), Text(phase.name), Text(_state_words(phase),
                                                                      style=style))
    table.add_row("", progress.calls_text(), usd(progress.cost_usd))
    notes = [Text(f"! {note}", style="yellow") for note in progress.notes[-NOTES_SHOWN:]]
    return Panel(Group(table, *notes), title=_title(progress, rehearsal))


async def _fold(queue: asyncio.Queue[Event], task: asyncio.Future[DebateResult],
                progress: Progress, live: Live | None, rehearsal: bool) -> None:
    while not task.done() or not queue.empty():
        try:
            event = await asyncio.wait_for(queue.get(), timeout=0.1)
        except TimeoutError:
            continue
        if progress.apply_event(event) and live is not None:
            live.update(panel(progress, rehearsal=rehearsal))


async def run_with_progress(console: Console, queue: asyncio.Queue[Event],
                            work: Awaitable[DebateResult], *, topic: str, plan: Plan,
                            rehearsal: bool) -> DebateResult:
    """Await `work` while folding its events into the panel; returns its result."""
    progress = progress_for_plan(plan, topic=topic)
    task = asyncio.ensure_future(work)
    if console.is_terminal:
        with Live(panel(progress, rehearsal=rehearsal), console=console, refresh_per_second=8,
                  transient=False) as live:
            await _fold(queue, task, progress, live, rehearsal)
    else:
        await _fold(queue, task, progress, None, rehearsal)
        console.print(panel(progress, rehearsal=rehearsal))
    return await task


# --------------------------------------------------------------------------------------------
# the summary and the estimate


def _say(console: Console, text: str, style: str | None = None) -> None:
    """Print model or user text literally (rich markup inside it is never interpreted), wrapped
    at words to the terminal's width."""
    print_line(console, text, style or "")


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def agreement_line(result: DebateResult, thresholds: ThresholdSpec | None = None) -> str:
    """"Alpha 0.799 [0.61, 0.90]  kappa 0.40  band tentative (0.67 ≤ α < 0.80)  routing …"."""
    c = result.consensus
    if c is None:
        return ""
    interval = f" {interval_text(c.alpha_interval)}" if c.alpha_interval else ""
    rule = band_rule(c.band, thresholds) if thresholds is not None else ""
    band = f"{c.band} ({rule})" if rule else str(c.band)
    return (f"Alpha {alpha_text(c.alpha, thresholds)}{interval}  kappa {_fmt(c.kappa)}  "
            f"band {band}  routing {result.routing}"
            + ("  IRRECONCILABLE" if c.irreconcilable else ""))


def print_summary(console: Console, result: DebateResult,
                  thresholds: ThresholdSpec | None = None, *, stored: str | None = None) -> None:
    """The result in a few lines; `thresholds` (the preset's) print the band's rule. `stored`
    is the debate's stored status in words (`awaiting review`), which heads it when given: the
    engine's `completed` is not what a routed debate is."""
    if result.rehearsal:
        _say(console, REHEARSAL_NOTE, "bold yellow")
    style = "green" if result.status == ResultStatus.COMPLETED and not result.missing else "red"
    _say(console, f"{(stored or result.status).upper()} — {result.topic}", f"bold {style}")
    _say(console, f"Verdict: {result.verdict or 'none'}")
    if result.rationale:
        _say(console, f"Rationale: {result.rationale}")
    if line := agreement_line(result, thresholds):
        _say(console, line)
    for note in result.consensus.exclusion_notes if result.consensus else ():
        _say(console, f"Panel: {note}")
    _say(console, routing_sentence(result.routing))   # the console's and Slack's words
    print_preset(console, result)
    if result.brief is None:   # the brief lists them as points to discuss and agreements
        _print_points(console, "Agreements", result.divergence.agreements[:5])
        _print_points(console, "Disagreements", result.divergence.disagreements[:3])
    _print_outcome(console, result)
    if result.flagged:
        _say(console, f"{flag_headline(result.preset)} {FLAG_MEANING}", "bold red")
        for finding in result.injection[:5]:
            _say(console, f"  - {finding.source}: {finding.reason} ({finding.excerpt!r})")
    if result.missing:
        _say(console, "Incomplete — missing:", "bold red")
        for item in result.missing:
            _say(console, f"  - {item}")
    cost = result.cost
    details = token_details(cost)
    _say(console, f"Cost {usd(cost.usd)} ({cost.prompt_tokens:,} prompt + "
                  f"{cost.completion_tokens:,} completion tokens"
                  f"{f' ({details})' if details else ''}, {counted(cost.calls, 'call')}, "
                  f"{cost.reused_calls} reused)  time\u00a0{result.elapsed_seconds:.1f}\u00a0s")
    # (no-break spaces: a wrapped line never leaves the unit alone on the next one)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_outcome(console: Console, result: DebateResult) -> None:
    """Panel, critique and redteam outcomes as prose (bot/cli/outcomes.py); the others' few
    fields each on a line of at most OUTCOME_VALUE_MAX characters."""
    if print_outcome(console, result.outcome):
        return
    cut = False
    for key, value in list(result.outcome_details().items())[:6]:
        whole = plain_value(value)
        text = _short(whole, OUTCOME_VALUE_MAX)
        cut = cut or len(whole) > OUTCOME_VALUE_MAX
        _say(console, f"{key}: {text}")
    if cut:
        _say(console, WHOLE_HINT, "dim")


def _print_points(console: Console, title: str, points: Sequence[DivergencePoint]) -> None:
    if not points:
        return
    _say(console, f"{title}:")
    for p in points:
        _say(console, f"  - {_short(p.label or p.item, LABEL_MAX)}  ({point_figures(p).text})")


def print_estimate(console: Console, estimate: Estimate) -> None:
    if estimate.rehearsal:
        _say(console, REHEARSAL_NOTE, "bold yellow")
    reused = reuse_note(estimate)
    if estimate.cached_from:   # nothing to call, price or hold
        _say(console, reused[:1].upper() + reused[1:])
        return
    roles = ", ".join(f"{role} {n}" for role, n in sorted(estimate.calls_per_role.items()))
    _say(console, f"Mode {estimate.mode}: {counted(estimate.calls, 'call')} ({roles}), "
                  f"{counted(estimate.depth, 'dependent round')}")
    if reused:
        _say(console, reused[:1].upper() + reused[1:])
    _say(console, f"Tokens ~{estimate.prompt_tokens:,} prompt + ~{estimate.completion_tokens:,} "
                  f"completion (up to ~{estimate.completion_tokens_high:,} with verbose "
                  f"replies); estimated cost {estimate_range(estimate)}")
    note = ceiling_note(estimate)   # names a variable: only its first letter is raised
    _say(console, note[:1].upper() + note[1:])
    if estimate.stand_ins:
        _say(console, stand_in_note(estimate), "yellow")
    if estimate.admission:
        words = estimate.admission[:1].upper() + estimate.admission[1:]
        _say(console, words, None if estimate.admitted else "bold red")
