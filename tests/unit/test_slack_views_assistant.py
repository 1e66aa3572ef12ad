"""The DM surface's words: the status line folded from engine events, the suggested prompts,
the thread's title."""

from __future__ import annotations

import pytest

from bot.service.progress import progress_for
from bot.slack.parsing import parse_command
from bot.slack.views.assistant import (
    MAX_PROMPTS,
    dm_help,
    prompt_message,
    status_line,
    suggested_prompts,
    thread_title,
)
from engine.domain import DebateRequest, Event, EventKind
from engine.settings import EngineSettings

ENGINE = EngineSettings(rehearsal=True)


def _progress(*events: tuple[EventKind, str | None]):  # type: ignore[no-untyped-def]
    progress = progress_for(ENGINE, DebateRequest(topic="Should we?", mode="consensus"))
    for kind, phase in events:
        data = {"phase": phase} if phase else {"mode": "consensus", "topic": "Should we?"}
        progress.apply_event(Event(kind=kind, debate_id="d1", data=data))
    return progress


S, F = EventKind.PHASE_STARTED, EventKind.PHASE_FINISHED


@pytest.mark.parametrize(("events", "expected"), [
    ((), "is preparing the arguments…"),
    (((EventKind.DEBATE_STARTED, None),), "is preparing the arguments…"),
    (((S, "opening"),), "is debating: opening (1/4)…"),
    (((S, "opening"), (F, "opening")), "is moving on to cross-examination (2/4)…"),
    (((S, "opening"), (F, "opening"), (S, "cross-examination")),
     "is debating: cross-examination (2/4)…"),
    (((EventKind.DEBATE_STARTED, None), (S, "judging")),
     "is waiting on the judges: they are scoring…"),
    (tuple((k, p) for p in ("opening", "cross-examination", "closing", "judging")
           for k in (S, F)), "is weighing the verdicts…"),
])
def test_the_status_line_follows_the_phases(events: tuple[tuple[EventKind, str | None], ...],
                                            expected: str) -> None:
    assert status_line(_progress(*events), rehearsal=False) == expected
    assert status_line(_progress(*events), rehearsal=True) == f"{expected} (rehearsal)"


def test_prompts_offer_only_presets_that_exist_at_most_four() -> None:
    assert [p["title"] for p in suggested_prompts(["market", "appeal"])] == ["Bull vs bear"]
    everything = suggested_prompts(["default", "market", "decision", "compliance", "brief"])
    assert len(everything) == MAX_PROMPTS
    for prompt in everything:   # each prompt, sent as a DM, starts the preset it offers
        command = parse_command(prompt["message"])
        assert command.action == "start" and command.topic.endswith("?")
    assert suggested_prompts([]) == []


@pytest.mark.parametrize(("preset", "message"), [
    ("default", "Should we?"), ("decision", "Should we? --preset decision")])
def test_a_prompt_names_its_preset_in_the_dm_grammar(preset: str, message: str) -> None:
    assert prompt_message(preset, "Should we?") == message
    assert (parse_command(message).preset or "default") == preset


@pytest.mark.parametrize(("topic", "title"), [
    ("Should we\n  adopt <!channel> & X?", "Should we adopt &lt;!channel&gt; &amp; X?"),
    ("   ", "Debate"),
    ("y" * 200, "y" * 79 + "…"),
])
def test_the_title_is_the_question_escaped_on_one_line(topic: str, title: str) -> None:
    assert thread_title(topic) == title


def test_the_dm_help_escapes_the_problem() -> None:
    text = dm_help("unknown preset '<!here>'").text
    assert "<!here>" not in text and "&lt;!here&gt;" in text and "--preset decision" in text
