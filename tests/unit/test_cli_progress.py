"""The terminal face of a debate: the progress panel over the shared fold (titled with the topic
and mode, honest about failed phases, a newline at its end when piped) and the summary's
numbers (alpha against its band, scores on the 1-10 scale)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from bot.cli.progress import panel, print_summary, run_with_progress
from bot.service.progress import Progress, progress_from
from bot.service.providers import make_llm
from engine.core.debate import prepare, run_debate
from engine.domain import CostBreakdown, DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.settings import EngineSettings, ThresholdSpec
from tests.support.slack_view_fixtures import near_threshold_result


def console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=100, force_terminal=terminal, color_system=None), out


def rendered(progress: Progress, *, rehearsal: bool = False) -> str:
    screen, out = console(terminal=False)
    screen.print(panel(progress, rehearsal=rehearsal))
    return out.getvalue()


def test_the_panel_is_titled_with_the_topic_and_mode_as_plain_text() -> None:
    progress = Progress(topic="Is [bold]markup[/bold] shown\nas typed?", mode="consensus")
    first_line = rendered(progress, rehearsal=True).splitlines()[0]
    assert "Is [bold]markup[/bold] shown as typed? · consensus [REHEARSAL]" in first_line


def test_a_long_topic_is_cut_in_the_title() -> None:
    first_line = rendered(Progress(topic="word " * 40, mode="simple")).splitlines()[0]
    assert "… · simple" in first_line and len(first_line) <= 100


def test_the_panel_shows_failed_and_partial_phases_and_the_calls() -> None:
    progress = progress_from([
        ("phase_started", {"phase": "opening"}),
        ("step_degraded", {"key": "o/pro", "phase": "opening", "reason": "refused"}),
        ("phase_finished", {"phase": "opening"}),
        ("phase_started", {"phase": "rebuttal"}),
        ("step_finished", {"key": "r/pro", "phase": "rebuttal", "cost_usd": 0.25}),
        ("step_filtered", {"key": "r/con", "phase": "rebuttal"}),
        ("phase_finished", {"phase": "rebuttal"}),
    ], Progress(planned=["opening", "rebuttal", "verdict"], planned_calls=5))
    lines = rendered(progress).splitlines()
    assert any("✗" in line and "opening" in line and "nothing succeeded" in line
               for line in lines)
    assert any("⚠" in line and "rebuttal" in line and "1 missing" in line for line in lines)
    assert any("·" in line and "verdict" in line for line in lines)
    assert any("calls 3/5, 2 missing" in line and "$0.25" in line for line in lines)
    assert any("! degraded: o/pro — refused" in line for line in lines)
    assert not any("✓" in line for line in lines)


@pytest.mark.parametrize("terminal", [False, True])
async def test_a_real_run_ends_its_panel_with_a_newline(terminal: bool) -> None:
    settings = EngineSettings(rehearsal=True)
    prepared = prepare(settings, DebateRequest(topic="Tabs or spaces?", mode="simple", rounds=1))
    sink = MemoryEventSink()
    queue = sink.queue()
    llm = make_llm(settings)
    screen, out = console(terminal=terminal)
    try:
        work = run_debate(prepared, debate_id="d1", settings=settings, llm=llm,
                          store=MemoryCheckpointStore(), sink=sink)
        result = await run_with_progress(screen, queue, work, topic="Tabs or spaces?",
                                         plan=prepared.plan, rehearsal=True)
    finally:
        await llm.aclose()
    text = out.getvalue().replace("\x1b[?25h", "")  # a terminal gets its cursor back last
    assert result.status == "completed"
    assert text.endswith("╯\n")
    assert "Tabs or spaces? · simple [REHEARSAL]" in text
    assert f"calls {len(prepared.plan.calls)}/{len(prepared.plan.calls)}" in text
    if not terminal:  # piped: printed once, at the end
        assert text.count("╭") == 1


@pytest.mark.parametrize(("thresholds", "expected"), [
    (ThresholdSpec(), "Alpha 0.799 [0.18, 0.61]  kappa 0.31  band tentative (0.67 ≤ α < 0.80)"),
    (None, "Alpha 0.799 [0.18, 0.61]  kappa 0.31  band tentative  routing tentative"),
])
def test_the_summary_prints_alpha_so_it_cannot_contradict_its_band(
        thresholds: ThresholdSpec | None, expected: str) -> None:
    screen, out = console(terminal=False)
    print_summary(screen, near_threshold_result(), thresholds)
    text = out.getvalue()
    assert expected in text
    assert "Alpha 0.80" not in text


def test_the_summary_keeps_calibrated_scores_on_the_scale() -> None:
    screen, out = console(terminal=False)
    print_summary(screen, near_threshold_result())
    text = out.getvalue()
    assert "Against · logic  (calibrated mean 5.5, spread 9.0)" in text
    assert "11.3" not in text


@pytest.mark.parametrize(("cost", "line"), [
    (CostBreakdown(usd=0.0123, prompt_tokens=10_350, completion_tokens=2_050, cached_tokens=3_072,
                   reasoning_tokens=1_850, calls=10),
     "Cost $0.0123 (10,350 prompt + 2,050 completion tokens (3,072 cached, 1,850 reasoning), "
     "10 calls, 0 reused)"),
    (CostBreakdown(usd=0.0123, prompt_tokens=10_350, completion_tokens=2_050, calls=10),
     "Cost $0.0123 (10,350 prompt + 2,050 completion tokens, 10 calls, 0 reused)"),
])
def test_the_summary_names_cached_and_reasoning_tokens_when_there_are_any(
        cost: CostBreakdown, line: str) -> None:
    screen, out = console(terminal=False)
    print_summary(screen, near_threshold_result().model_copy(update={"cost": cost}))
    assert line in " ".join(out.getvalue().split())
