"""The rules of a workspace schedule's form (bot/scheduling/workspace.py), pure (here, not in
unit/, because croniter runs `file` when first imported): each refusal is
one line naming its field; what passes is normalised as stored."""

from __future__ import annotations

import pytest

from bot.scheduling.workspace import CONFIG_PREFIX, config_of, parse_form
from bot.service.workspace_settings import FieldError
from storage.workspace_schedules import WorkspaceSchedule

PRESETS = ("market", "decision")
GOOD = {"name": "morning-run", "preset": "market", "topics": "  Brent crude  \n\nThe ECB\n",
        "cron": "0  8 * * 1-5", "timezone": "Europe/Paris", "channel": "<#C0MARKETS|markets>"}


def test_a_good_form_is_normalised() -> None:
    assert parse_form(GOOD, presets=PRESETS) == {
        "name": "morning-run", "preset": "market", "topics": ("Brent crude", "The ECB"),
        "cron": "0 8 * * 1-5", "timezone": "Europe/Paris", "channel": "C0MARKETS"}


def test_absent_fields_are_left_alone() -> None:
    assert parse_form({"cron": "15 * * * *"}, presets=PRESETS) == {"cron": "15 * * * *"}


@pytest.mark.parametrize(("field", "value", "words"), [
    ("name", "", "name: lowercase letters"),
    ("name", "Morning", "name: lowercase letters"),
    ("name", "x" * 65, "name: lowercase letters"),
    ("preset", "appeals", "preset: no preset 'appeals' (presets: decision, market)"),
    ("topics", "", "topics: give at least one topic"),
    ("topics", "\u200b\n\u2060 \ufe0f", "topics: a topic with no visible text"),
    ("topics", "\n".join(f"topic {i}" for i in range(11)), "topics: at most 10"),
    ("topics", "x" * 501, "topics: each at most 500 characters"),
    ("cron", "* * * * *", "cron: at most once an hour"),
    ("cron", "*/30 9 * * *", "cron: at most once an hour"),
    ("cron", "0,30 9 * * *", "cron: at most once an hour"),
    ("cron", "0-5 9 * * *", "cron: at most once an hour"),
    ("cron", "0 9 * *", "cron: "),
    ("cron", "61 9 * * *", "cron: "),
    ("timezone", "Europe/Atlantis", "time zone: unknown time zone"),
    ("channel", "#general", "channel: give its id"),
    ("channel", "not a channel!", "channel: "),
])
def test_a_refused_field_is_one_line_naming_it(field: str, value: str, words: str) -> None:
    with pytest.raises(FieldError) as refused:
        parse_form({**GOOD, field: value}, presets=PRESETS)
    assert refused.value.field == field
    assert str(refused.value).startswith(words) and "\n" not in str(refused.value)


def test_the_schedulers_value_is_the_workspaces_digest() -> None:
    fields = parse_form(GOOD, presets=PRESETS)
    config = config_of(WorkspaceSchedule(id="abc123", team_id="T0SECOND", **fields))
    assert config.id == CONFIG_PREFIX + "abc123" and config.team == "T0SECOND"
    assert config.topics == ("Brent crude", "The ECB") and config.source is None
    assert str(config.tz) == "Europe/Paris" and config.enabled
