"""The terminal reads panel, critique and redteam outcomes as prose (bot/cli/outcomes.py): real
debates run in process on the offline rehearsal model, then summarised into a recording console.
No Python reprs, the synthesis / final answer / mitigations whole, every line within the width,
and model text printed literally, never as rich markup."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console

from bot.cli.progress import WHOLE_HINT, print_summary
from engine.domain import DebateResult
from engine.reading.outcomes import CritiqueOutcome, PanelOutcome, RedTeamOutcome
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

TOPIC = "Should a startup adopt microservices from day one?"
WIDTH = 100
REPRS = ("{'", "[{", "': ", "['", "None", "PanelReflection(", "FinalAnswer(")
HOSTILE = "[bold]loud[/bold] <!channel> [red]x[/]"


def _result(cli: Cli, mode: str) -> DebateResult:
    done = cli("run", TOPIC, "--mode", mode, "--json")
    assert done.returncode == 0, done.stderr
    result = DebateResult.model_validate(json.loads(done.stdout))
    assert result.rehearsal and result.mode == mode
    return result


def _printed(result: DebateResult) -> str:
    console = Console(record=True, width=WIDTH, color_system=None)
    print_summary(console, result)
    return console.export_text()


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _expected(outcome: Any) -> list[str]:
    """Each mode's point, which must be shown whole."""
    if isinstance(outcome, PanelOutcome):
        s = outcome.synthesis
        assert s is not None
        return [s.conclusion, s.answer, s.rationale, *s.agreements, *s.disagreements,
                *(p.final.summary for p in outcome.panelists if p.final is not None)]
    if isinstance(outcome, CritiqueOutcome):
        f = outcome.final
        assert f is not None
        return [f.summary, f.answer, *f.key_points, *f.open_issues]
    assert isinstance(outcome, RedTeamOutcome)
    assert outcome.synthesis is not None and outcome.analysis is not None
    assert outcome.challenge is not None and outcome.revision is not None
    return [outcome.synthesis.decision, outcome.synthesis.rationale, *outcome.mitigations,
            outcome.analysis.summary, *(r.risk for r in outcome.challenge.risks),
            *outcome.challenge.counter_arguments, outcome.revision.action]


@pytest.mark.parametrize(("mode", "headings"), [
    ("panel", ("Panel —", "Agreement by round", "Round 0 (independent answers)", "Synthesis",
               "Conclusion:", "Agreements:", "Disagreements:", "Confidence:", "Stance ")),
    ("critique", ("Critique —", "stopped because", "Round 1:", "objection", "severity",
                  "Final answer", "Key points:", "Open issues:")),
    ("redteam", ("Analysis", "Metrics:", "Factors:", "Strategy", "Red team", "Risks:",
                 "Counter-arguments:", "Revision", "consensus reached:", "Mitigation steps:")),
])
def test_each_mode_reads_as_prose_whole_and_within_the_width(
        cli: Cli, mode: str, headings: tuple[str, ...]) -> None:
    result = _result(cli, mode)
    printed = _printed(result)
    for fragment in REPRS:
        assert fragment not in printed, (fragment, printed)
    assert WHOLE_HINT not in printed and "…" not in printed
    for heading in headings:
        assert heading in printed, (heading, printed)
    for text in _expected(result.outcome):
        assert _squeezed(text) in _squeezed(printed), text
    assert max(len(line) for line in printed.splitlines()) <= WIDTH
    indented = [line for line in printed.splitlines() if line.startswith("  ")]
    assert indented and all(line == line.rstrip() for line in indented)   # no padding after


def test_the_command_prints_the_prose_and_json_stays_the_machine_format(cli: Cli) -> None:
    done = cli("run", TOPIC, "--mode", "redteam")
    assert done.returncode == 0, done.stderr
    assert "Mitigation steps:" in done.stdout and "{'" not in done.stdout
    as_json = json.loads(cli("run", TOPIC, "--mode", "redteam", "--json").stdout)
    assert set(as_json["outcome"]) >= {"mode", "analysis", "synthesis", "consensus_reached"}
    assert isinstance(as_json["outcome"]["synthesis"]["mitigation_steps"], list)


def test_model_text_is_printed_literally(cli: Cli) -> None:
    result = _result(cli, "panel")
    assert isinstance(result.outcome, PanelOutcome) and result.outcome.synthesis is not None
    synthesis = result.outcome.synthesis.model_copy(
        update={"conclusion": HOSTILE, "agreements": [HOSTILE]})
    hostile = result.model_copy(update={"outcome": result.outcome.model_copy(
        update={"synthesis": synthesis})})
    printed = _printed(hostile)
    assert f"Conclusion: {HOSTILE}" in printed
    assert f"- {HOSTILE}" in printed


@pytest.mark.parametrize(("mode", "missing", "words"), [
    ("panel", {"synthesis": None}, "No synthesis"),
    ("critique", {"final": None}, "No final answer"),
    ("redteam", {"synthesis": None, "consensus_reached": None}, "No decision"),
    ("redteam", {"challenge": None}, "No challenge"),
])
def test_a_missing_part_is_said_in_words(cli: Cli, mode: str, missing: dict[str, Any],
                                        words: str) -> None:
    result = _result(cli, mode)
    assert result.outcome is not None
    degraded = result.model_copy(update={"outcome": result.outcome.model_copy(update=missing)})
    printed = _printed(degraded)
    assert words in printed and "degraded or was refused" in printed
    assert "None" not in printed


@pytest.mark.parametrize("width", [60, 100])
@pytest.mark.parametrize("mode", ["consensus", "structured"])
def test_summary_lines_wrap_at_words_within_the_width(cli: Cli, mode: str, width: int) -> None:
    """The verdict, rationale and alpha lines are longer than a terminal: wrapped between words,
    never inside one, continuation indented."""
    from bot.cli.progress import agreement_line

    result = _result(cli, mode)
    result = result.model_copy(update={"verdict": result.verdict + " " + "word " * 30})
    console = Console(record=True, width=width, color_system=None)
    print_summary(console, result)
    printed = console.export_text()
    lines = printed.splitlines()
    assert max(len(line) for line in lines) <= width
    tokens = printed.split()
    for whole in (f"Verdict: {result.verdict}", agreement_line(result) or ""):
        words = whole.split()
        assert any(tokens[i:i + len(words)] == words for i in range(len(tokens))), whole
    verdict_at = next(i for i, line in enumerate(lines) if line.startswith("Verdict: "))
    assert lines[verdict_at + 1].startswith("  ") and not lines[verdict_at + 1].startswith("   ")
