"""The pure parsers behind the Slack listeners: /debate text, mentions, modal state, context."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from bot.slack.listeners.events import edited_message, mentions, spoken_message
from bot.slack.listeners.shortcuts import appeal_of, appeal_request, policy_for
from bot.slack.parsing import (
    JUDGES_RANGE,
    ROUNDS_RANGE,
    USAGE,
    Command,
    CommandError,
    ModalError,
    ThreadLine,
    Token,
    parse_command,
    parse_mention,
    parse_modal,
    thread_context,
    tokenize,
)
from bot.slack.settings import SlackSettings
from bot.slack.views import modals as M
from bot.slack.views.modals import MODAL_IDS
from engine.domain import DebateRequest
from engine.vocabulary import MAX_JUDGES, MAX_ROUNDS, MAX_TOPIC_CHARS, Mode, choices


@pytest.mark.parametrize(("text", "tokens"), [
    ("", []),
    ("a  b", [Token("a"), Token("b")]),
    ('"Is it fine?" --mode simple', [Token("Is it fine?", True), Token("--mode"),
                                     Token("simple")]),
    ("“Curly quotes work” too", [Token("Curly quotes work", True), Token("too")]),
    ("Shouldn't we? It's fine", [Token("Shouldn't"), Token("we?"), Token("It's"),
                                 Token("fine")]),
    ('""', [Token("", True)]),
])
def test_tokenize(text: str, tokens: list[Token]) -> None:
    assert tokenize(text) == tokens


@pytest.mark.parametrize(("text", "expected"), [
    ("", Command("modal")),
    ("   ", Command("modal")),
    ("help", Command("help")),
    ("HELP", Command("help")),
    ("budget", Command("budget")),
    ("status", Command("status")),
    ("status 0a1b2c3d4e5f6a7b", Command("status", debate_id="0a1b2c3d4e5f6a7b")),
    ("Should we move billing to PostgreSQL?",
     Command("start", topic="Should we move billing to PostgreSQL?")),
    ("--mode simple Should we?", Command("start", topic="Should we?", mode="simple")),
    ("Should we --rounds 2 adopt it? --judges 5",
     Command("start", topic="Should we adopt it?", rounds=2, judges=5)),
    ("Should we? --preset=Decision --mode=Structured",
     Command("start", topic="Should we?", preset="decision", mode="structured")),
    ("Should we? —mode simple", Command("start", topic="Should we?", mode="simple")),
    ('"status quo or change?"', Command("start", topic="status quo or change?")),
    ('"Is --force ever fine?" --mode critique',
     Command("start", topic="Is --force ever fine?", mode="critique")),
    ("help me decide between A and B", Command("start",
                                               topic="help me decide between A and B")),
    ("status quo is better than change", Command("start",
                                                 topic="status quo is better than change")),
    ("estimate Should we? --mode panel", Command("estimate", topic="Should we?", mode="panel")),
    ("Shouldn't we ship it?", Command("start", topic="Shouldn't we ship it?")),
])
def test_parse_command(text: str, expected: Command) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("--mode simple", "say what to debate"),
    ("Should we? --mode", "--mode needs a value"),
    ("Should we? --mode --rounds 1", "--mode needs a value"),
    ("Should we? --mode chaos", "unknown mode 'chaos'"),
    ("Should we? --colour red", "unknown option --colour"),
    ("Should we? --rounds two", "--rounds takes a whole number"),
    ("Should we? --rounds 9", "--rounds must be between 0 and 5"),
    ("Should we? --judges 0", "--judges must be between 1 and 8"),
    ("Should we? --mode simple --mode panel", "--mode is given twice"),
    ('"Should we? --mode simple', "a quote is not closed"),
    ("estimate", "say what to estimate"),
    ("status not/an/id", "is not a debate id"),
    ("Should we? --preset a.b", "is not a preset name"),
])
def test_parse_command_errors(text: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text)
    assert message in str(info.value)


@pytest.mark.parametrize(("flag", "field"), [("rounds", "rounds"), ("judges", "judges")])
def test_the_parser_accepts_exactly_what_the_request_accepts(flag: str, field: str) -> None:
    """The limits are DebateRequest's (the REST body's), not numbers repeated here."""
    low, high = (ROUNDS_RANGE if flag == "rounds" else JUDGES_RANGE)
    for value in (low, high):
        command = parse_command(f"Should we? --{flag} {value}")
        assert getattr(command.request(requested_by="U1"), field) == value
    for value in (low - 1, high + 1):
        with pytest.raises(CommandError, match=f"between {low} and {high}"):
            parse_command(f"Should we? --{flag} {value}")
        with pytest.raises(ValidationError):
            DebateRequest(topic="x", **{field: value})
    assert (ROUNDS_RANGE, JUDGES_RANGE) == ((0, MAX_ROUNDS), (1, MAX_JUDGES))


def test_the_usage_names_every_mode_and_limit() -> None:
    assert all(mode in USAGE for mode in choices(Mode))
    assert f"Rounds 0-{MAX_ROUNDS}, judges 1-{MAX_JUDGES}" in USAGE
    assert f"{MAX_TOPIC_CHARS:,} characters" in USAGE


def test_a_topic_over_the_limit_is_refused_with_its_length() -> None:
    with pytest.raises(CommandError, match=f"the limit is {MAX_TOPIC_CHARS:,}"):
        parse_command("x" * (MAX_TOPIC_CHARS + 1))
    assert parse_command("x" * MAX_TOPIC_CHARS).topic == "x" * MAX_TOPIC_CHARS
    with pytest.raises(ModalError) as info:
        parse_modal(_values(topic="y" * (MAX_TOPIC_CHARS + 1)), ids=MODAL_IDS)
    assert info.value.block_id == M.TOPIC_BLOCK


def test_a_command_leaves_unset_fields_to_the_preset() -> None:
    request = Command("start", topic="Should we?").request(requested_by="U1")
    assert request.model_fields_set >= {"topic", "requested_by"}
    assert "mode" not in request.model_fields_set and request.preset is None
    full = Command("start", topic="x", mode="simple", rounds=2, judges=3, preset="market")
    assert full.request(requested_by="U1").model_dump(include={"mode", "rounds", "judges",
                                                               "preset"}) == {
        "mode": "simple", "rounds": 2, "judges": 3, "preset": "market"}


@pytest.mark.parametrize(("text", "question"), [
    ("<@UBOT0001> debate", ""),
    ("<@UBOT0001> debate Is Kafka overkill?", "Is Kafka overkill?"),
    ("<@UBOT0001|dialectic> Debate: is it?", "is it?"),
    ("hey <@UBOT0001> debate   this one  ", "this one"),
    ("<@UBOT0001> hello", None),
    ("<@UBOT0001> debated already", None),
    ("<@UBOT0001> debate whether <@UBOB>'s plan works", "whether <@UBOB>'s plan works"),
])
def test_parse_mention(text: str, question: str | None) -> None:
    assert parse_mention(text, "UBOT0001") == question
    if "UBOB" not in text:
        assert parse_mention(text) == question


def test_thread_context_keeps_the_newest_lines_within_the_limit() -> None:
    lines = [ThreadLine(f"1.{i}", "U1", f"line {i}") for i in range(10)]
    assert thread_context(lines, skip_ts={"1.9"}).splitlines()[-1] == "<@U1>: line 8"
    short = thread_context(lines, limit=42)
    assert short.splitlines() == ["<@U1>: line 7", "<@U1>: line 8", "<@U1>: line 9"]
    assert thread_context([ThreadLine("1", "U1", "   ")]) == ""


def _values(topic: str | None = "Should we?", **selected: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if topic is not None:
        values[M.TOPIC_BLOCK] = {M.TOPIC_ACTION: {"type": "plain_text_input", "value": topic}}
    for key, value in selected.items():
        block, action = MODAL_IDS[key]
        values[block] = {action: {"type": "static_select", "selected_option": {"value": value}}}
    return values


def test_parse_modal() -> None:
    command = parse_modal(_values(mode="simple", preset="market", judges="4"), ids=MODAL_IDS)
    assert command == Command("start", topic="Should we?", mode="simple", preset="market",
                              judges=4)
    assert parse_modal(_values(), ids=MODAL_IDS) == Command("start", topic="Should we?")


@pytest.mark.parametrize(("values", "block"), [
    (_values(topic="  "), M.TOPIC_BLOCK),
    (_values(topic=None), M.TOPIC_BLOCK),
    (_values(mode="chaos"), M.MODE_BLOCK),
    (_values(judges="99"), M.JUDGES_BLOCK),
])
def test_parse_modal_errors_name_the_block(values: dict[str, Any], block: str) -> None:
    with pytest.raises(ModalError) as info:
        parse_modal(values, ids=MODAL_IDS)
    assert info.value.block_id == block


@pytest.mark.parametrize(("event", "spoken"), [
    ({"type": "message", "channel": "C1", "user": "U1", "ts": "1.1", "text": "hi"}, True),
    ({"type": "message", "subtype": "thread_broadcast", "channel": "C1", "user": "U1",
      "ts": "1.1", "text": "hi"}, True),
    ({"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.2"}, False),
    ({"type": "message", "subtype": "channel_join", "channel": "C1", "user": "U1",
      "ts": "1.1"}, False),
    ({"type": "message", "channel": "C1", "user": "U1", "bot_id": "B1", "ts": "1.1"}, False),
    ({"type": "message", "channel": "C1", "ts": "1.1", "text": "no user"}, False),
])
def test_spoken_message(event: dict[str, Any], spoken: bool) -> None:
    assert (spoken_message(event) is not None) is spoken


def test_an_edit_replaces_the_remembered_text() -> None:
    edit = {"type": "message", "subtype": "message_changed", "channel": "C1",
            "message": {"type": "message", "user": "U1", "ts": "1.1", "text": "new",
                        "edited": {"user": "U1"}}}
    message = edited_message(edit)
    assert message is not None and (message.channel_id, message.text) == ("C1", "new")
    assert mentions("<@UBOT> debate", "UBOT") and not mentions("debate", None)


def test_appeals_read_the_shortcut_and_pick_the_workspace_policy() -> None:
    body = {"type": "message_action", "team": {"id": "T1"}, "channel": {"id": "C1"},
            "user": {"id": "U1"}, "trigger_id": "t", "response_url": "https://r",
            "message": {"ts": "1.1", "thread_ts": "1.0", "user": "U2", "text": "<!channel> buy"}}
    appeal = appeal_of(body)
    assert (appeal.channel_id, appeal.thread_ts, appeal.author) == ("C1", "1.0", "U2")
    settings = SlackSettings(appeal_policy="global", workspace_policies={"T1": "team one"})
    assert policy_for(settings, "T1") == "team one" and policy_for(settings, "T9") == "global"
    assert policy_for(SlackSettings(), "T1") == ""
    request = appeal_request(appeal, "team one")
    assert request.preset == "appeal" and request.options.policy == "team one"
    assert request.no_cache and "<!channel> buy" in request.context  # escaped only for Slack
