"""What panel, critique and redteam debates end with, and what presets promise (decision's
"needs human discussion", brief's one-page brief: engine/reading/discussion.py), read as prose in
the terminal: sentences and bullet lists from the typed values, the model's text whole and literal
(never rich markup), wrapped to the console's width. `--json` stays the machine format.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from bot.service.results import point_figures
from engine.domain import Brief, DebateResult, Discussion, DivergencePoint, TraceRow
from engine.reading.outcomes import (
    CritiqueOutcome,
    CritiqueRound,
    CritiqueStop,
    ModeOutcome,
    PanelOutcome,
    PanelStop,
    RedTeamOutcome,
    RoundAgreement,
)
from engine.schemas.panel import PanelReflection
from engine.schemas.redteam import StrategyProposal

INDENT = 2
PANEL_STOPS = {PanelStop.ROUND_LIMIT: "it reached its round limit",
               PanelStop.ALL_APPROVED: "every panelist approved",
               PanelStop.NO_ANSWERS: "no panelist answered"}
CRITIQUE_STOPS = {CritiqueStop.CRITIC_SATISFIED: "the critic was satisfied",
                  CritiqueStop.CONVERGED: "the proposals converged",
                  CritiqueStop.ROUND_LIMIT: "it reached its round limit",
                  CritiqueStop.NO_PROPOSAL: "the proposer never answered"}


# --------------------------------------------------------------------------------------------
# printing: text is text, wrapped to the console's width whatever its soft_wrap


MIN_WRAP = 20


def _wrapped(console: Console, text: Text, first: str, rest: str) -> None:
    """`text` wrapped by rich to the console's width less its prefix: `first` before its first
    line, `rest` before the others (a hanging indent), no trailing spaces, never markup."""
    lines = text.wrap(console, max(console.width - max(len(first), len(rest)), MIN_WRAP))
    for n, line in enumerate(lines):
        line.rstrip()
        console.print(Text(first if n == 0 else rest) + line, markup=False, highlight=False,
                      soft_wrap=True)   # wrapped already: the console must not crop it


def _say(console: Console, text: str, *, indent: int = 0, style: str = "") -> None:
    _wrapped(console, Text(text, style=style), " " * indent, " " * indent)


def print_line(console: Console, text: str, style: str = "") -> None:
    """One line of a summary, wrapped at words: a "  - item" hangs under its item's text, any
    other line's continuation is indented two spaces."""
    body = text.lstrip(" ")
    lead = " " * (len(text) - len(body))
    first, rest = (lead + "- ", lead + "  ") if body.startswith("- ") else (lead, lead + "  ")
    _wrapped(console, Text(body.removeprefix("- ") if first.endswith("- ") else body,
                           style=style), first, rest)


def _heading(console: Console, text: str) -> None:
    _say(console, text, style="bold")


def _bullets(console: Console, title: str, items: Sequence[str], *, indent: int = INDENT,
             empty: str = "none") -> None:
    """"Title:" then one "- item" per item, its wrapped lines hanging under its text."""
    if not items:
        _say(console, f"{title}: {empty}", indent=indent)
        return
    _say(console, f"{title}:", indent=indent)
    pad = " " * (indent + INDENT)
    for item in items:
        _wrapped(console, Text(item), f"{pad}- ", f"{pad}  ")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


# --------------------------------------------------------------------------------------------
# panel


def _round_words(r: RoundAgreement) -> str:
    name = "independent answers" if r.round == 0 else f"reflection {r.round}"
    stance = "n/a" if r.mean_stance is None else f"{r.mean_stance:.1f}"
    spread = "n/a" if r.stance_spread is None else str(r.stance_spread)
    return (f"Round {r.round} ({name}): agreement {_pct(r.agreement)}, mean stance {stance}/10, "
            f"spread {spread}; {r.approvals} of {r.answered} approve")


def print_panel(console: Console, outcome: PanelOutcome) -> None:
    _heading(console, f"Panel — {len(outcome.panelists)} panelists, {outcome.rounds_run} "
                      f"reflection round(s); stopped because "
                      f"{PANEL_STOPS.get(outcome.stopped_because, outcome.stopped_because)}")
    for p in outcome.panelists:
        _say(console, f"{p.name} ({p.persona})")
        if p.final is None:
            _say(console, "gave no usable answer", indent=INDENT, style="red")
            continue
        approves = "approves" if p.final.approve else "does not approve"
        _say(console, f"Stance {p.final.stance}/10, confidence {_pct(p.final.confidence)}, "
                      f"{approves}", indent=INDENT)
        _say(console, f"Summary: {p.final.summary}", indent=INDENT)
        if isinstance(p.final, PanelReflection) and p.final.changed:
            _say(console, f"Changed: {p.final.changed}", indent=INDENT)
    if outcome.agreement_by_round:
        _heading(console, f"Agreement by round ({outcome.agreement_measure})")
        for r in outcome.agreement_by_round:
            _say(console, _round_words(r), indent=INDENT)
    _print_synthesis(console, outcome)


def _print_synthesis(console: Console, outcome: PanelOutcome) -> None:
    _heading(console, "Synthesis")
    s = outcome.synthesis
    if s is None:
        _say(console, "No synthesis: the synthesizer's step degraded or was refused.",
             indent=INDENT, style="red")
        return
    _say(console, f"Conclusion: {s.conclusion}", indent=INDENT)
    _say(console, f"Answer: {s.answer}", indent=INDENT)
    _bullets(console, "Agreements", s.agreements)
    _bullets(console, "Disagreements", s.disagreements)
    _say(console, f"Rationale: {s.rationale}", indent=INDENT)
    _say(console, f"Confidence: {_pct(s.confidence)}", indent=INDENT)
    if (g := outcome.grade) is not None:
        _heading(console, f"Grade against the ground truth: accuracy {g.accuracy}/10, "
                          f"completeness {g.completeness}/10")
        _bullets(console, "Missing points", g.missing_points)
        _say(console, f"Rationale: {g.rationale}", indent=INDENT)


# --------------------------------------------------------------------------------------------
# critique


def _critique_round_words(r: CritiqueRound) -> str:
    objections = ("objections unknown" if r.objections is None
                  else f"{r.objections} objection{'s' if r.objections != 1 else ''}")
    severity = f"severity {r.severity}" if r.severity is not None else "severity unknown"
    satisfied = {True: "the critic was satisfied", False: "the critic was not satisfied",
                 None: "the critic's review is missing"}[r.satisfied]
    converged = {True: "; converged", False: "; not converged", None: ""}[r.converged]
    return f"Round {r.round}: {objections}, {severity}; {satisfied}{converged}"


def print_critique(console: Console, outcome: CritiqueOutcome) -> None:
    reason = CRITIQUE_STOPS.get(outcome.stopped_because, outcome.stopped_because)
    _heading(console, f"Critique — {outcome.rounds_run} of at most {outcome.round_limit} "
                      f"round(s); stopped because {reason}")
    for r in outcome.rounds:
        _say(console, _critique_round_words(r), indent=INDENT)
    _heading(console, "Final answer")
    final = outcome.final
    if final is None:
        _say(console, "No final answer: the last step degraded or was refused.",
             indent=INDENT, style="red")
        if (p := outcome.latest_proposal) is not None:
            _say(console, "The latest proposal instead:", indent=INDENT)
            _say(console, f"Summary: {p.summary}", indent=INDENT)
            _say(console, f"Answer: {p.answer}", indent=INDENT)
            _bullets(console, "Key points", p.key_points)
        return
    _say(console, f"Summary: {final.summary}", indent=INDENT)
    _say(console, f"Answer: {final.answer}", indent=INDENT)
    _bullets(console, "Key points", final.key_points)
    _bullets(console, "Open issues", final.open_issues)


# --------------------------------------------------------------------------------------------
# redteam


def _missing(console: Console, what: str) -> None:
    _say(console, f"No {what}: the step degraded or was refused.", indent=INDENT, style="red")


def _print_strategy(console: Console, title: str, s: StrategyProposal | None) -> None:
    _heading(console, title)
    if s is None:
        _missing(console, title.lower())
        return
    _say(console, f"Action: {s.action}", indent=INDENT)
    _say(console, f"Rationale: {s.rationale}", indent=INDENT)
    _say(console, f"Expected outcome: {s.expected_outcome}", indent=INDENT)
    _say(console, f"Confidence: {_pct(s.confidence)}", indent=INDENT)


def _print_analysis(console: Console, outcome: RedTeamOutcome) -> None:
    _heading(console, "Analysis")
    if (a := outcome.analysis) is None:
        _missing(console, "analysis")
        return
    _say(console, f"Summary: {a.summary}", indent=INDENT)
    _bullets(console, "Metrics", [f"{m.name}: {m.value}" for m in a.metrics])
    _bullets(console, "Factors", [f"{f.factor} ({f.effect}, weight {f.weight}/10)"
                                  for f in a.factors])
    _say(console, f"Confidence: {_pct(a.confidence)}", indent=INDENT)


def _print_challenge(console: Console, outcome: RedTeamOutcome) -> None:
    _heading(console, "Red team")
    if (c := outcome.challenge) is None:
        _missing(console, "challenge")
        return
    _say(console, f"Summary: {c.summary}", indent=INDENT)
    _say(console, f"Severity: {c.severity}", indent=INDENT)
    _bullets(console, "Risks", [f"{r.risk} (likelihood {r.likelihood}, impact {r.impact})"
                                for r in c.risks])
    _bullets(console, "Counter-arguments", c.counter_arguments)


def _print_decision(console: Console, outcome: RedTeamOutcome) -> None:
    consensus = {True: "yes", False: "no", None: "unknown (no decision)"}
    _heading(console, f"Decision — consensus reached: {consensus[outcome.consensus_reached]}")
    if (d := outcome.synthesis) is None:
        _missing(console, "decision")
        return
    _say(console, f"Decision: {d.decision}", indent=INDENT)
    _say(console, f"Rationale: {d.rationale}", indent=INDENT)
    _bullets(console, "Mitigation steps", d.mitigation_steps)
    _bullets(console, "Execution parameters",
             [f"{p.name}: {p.value}" for p in d.execution_parameters])
    _say(console, f"Confidence: {_pct(d.confidence)}", indent=INDENT)


def print_redteam(console: Console, outcome: RedTeamOutcome) -> None:
    _print_analysis(console, outcome)
    _print_strategy(console, "Strategy", outcome.proposal)
    _print_challenge(console, outcome)
    _print_strategy(console, "Revision", outcome.revision)
    if (r := outcome.revision) is not None:
        _bullets(console, "Changes", r.changes)
        _bullets(console, "Accepted risks", r.accepted_risks)
    _print_decision(console, outcome)


def print_outcome(console: Console, outcome: ModeOutcome | None) -> bool:
    """Print a panel, critique or redteam outcome as prose; False: not one of those."""
    if isinstance(outcome, PanelOutcome):
        print_panel(console, outcome)
    elif isinstance(outcome, CritiqueOutcome):
        print_critique(console, outcome)
    elif isinstance(outcome, RedTeamOutcome):
        print_redteam(console, outcome)
    else:
        return False
    return True


# --------------------------------------------------------------------------------------------
# what presets promise


SIDES = {"pro": "For", "con": "Against", "tie": "Tie"}


def _point(p: DivergencePoint) -> str:
    return f"{p.label or p.item} ({point_figures(p).text})"


def print_discussion(console: Console, flag: Discussion) -> None:
    if not flag.needed:
        _say(console, f"Not flagged for human discussion: {flag.reason}.")
        return
    _heading(console, f"NEEDS HUMAN DISCUSSION ({flag.reason})")
    _bullets(console, "The core divergence points", [_point(p) for p in flag.points],
             empty="none stands out: the judges differ across the board")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _claim(row: TraceRow) -> str:
    """A claim of the one-page map, shortened as the console's and Slack's are (`--json` and
    the trace have it whole)."""
    line = f"{SIDES.get(row.side, row.side)}: {_clip(row.claim, 200)} — {row.standing}"
    if row.challenged_by:
        line += f"; challenged by {SIDES.get(row.challenged_by, row.challenged_by)}"
        line += f": {_clip(row.challenge, 160)}" if row.challenge else ""
    return line


def print_brief(console: Console, brief: Brief) -> None:
    _heading(console, "Decision brief")
    points = [f"{p.label or p.item} — the judges split ({point_figures(p).spread_text})"
              for p in brief.points]
    if brief.split_on_winner:
        points.append("The judges' calls split on the winner: a person should decide.")
    _bullets(console, "Points to discuss", points,
             empty="no strong disagreement among the judges")
    _bullets(console, "Agreements", [p.label or p.item for p in brief.agreements],
             empty="none recorded")
    _bullets(console, "Arguments map", [_claim(r) for r in brief.arguments],
             empty="no argument trace")


def print_preset(console: Console, result: DebateResult) -> None:
    """The discussion flag or the brief the result's preset promises (nothing for others)."""
    if result.discussion is not None:
        print_discussion(console, result.discussion)
    if result.brief is not None:
        print_brief(console, result.brief)
