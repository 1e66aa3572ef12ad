"""Pure schedule maths: crontab weekdays, slots, latest and next fire times, catch-up plans,
configuration errors, signal lines, the brief command and a brief's start time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.scheduling.briefs import BRIEF_MIN_LEAD, brief_start, parse_brief
from bot.scheduling.calendar import (
    cron_trigger,
    crontab_weekdays,
    fires_between,
    latest_fire,
    manual_slot,
    next_fire,
    parse_slot,
    plan_catch_up,
    slot_key,
)
from bot.scheduling.config import ScheduleConfig, parse_channel
from bot.scheduling.signals import Signal, parse_signals
from bot.settings import load_settings
from engine.errors import ConfigurationError, InvalidRequest

PARIS = ZoneInfo("Europe/Paris")
WEEKDAYS_8AM_PARIS = "0 8 * * 1-5"   # 06:00 UTC in May (CEST)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- crontab weekdays -------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "expected"), [
    ("*", "*"),
    ("1-5", "mon,tue,wed,thu,fri"),
    ("0", "sun"),
    ("7", "sun"),
    ("5-7", "fri,sat,sun"),
    ("fri-sun", "fri,sat,sun"),
    ("*/2", "tue,thu,sat,sun"),          # crontab: 0,2,4,6 = sun,tue,thu,sat
    ("1,3,5", "mon,wed,fri"),
    ("SAT,sun", "sat,sun"),
    ("0-2", "mon,tue,sun"),
    ("mon-fri/2", "mon,wed,fri"),
    ("3/2", "wed,fri"),
])
def test_crontab_weekdays_keep_crontab_meaning(field: str, expected: str) -> None:
    assert crontab_weekdays(field) == expected


@pytest.mark.parametrize("field", ["8", "5-1", "mon-", "x", "1/0", "1,,2", "*/x"])
def test_crontab_weekdays_refuse_nonsense(field: str) -> None:
    with pytest.raises(ValueError, match=r"day|step|empty"):
        crontab_weekdays(field)


@pytest.mark.parametrize(("expr", "message"), [
    ("0 8 * *", "5 fields"),
    ("0 8 * * * *", "5 fields"),
    ("0 25 * * *", "higher than the maximum"),
    ("x 8 * * *", "Unrecognized expression"),
    ("0 8 31 2 *", "never fires"),
    ("0 8 * * 9", "day of week"),
])
def test_cron_trigger_errors_say_why(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cron_trigger(expr, PARIS)


# --- slots ------------------------------------------------------------------------------------

def test_slot_keys_are_utc_fixed_width_and_round_trip() -> None:
    when = datetime(2024, 5, 6, 8, 0, tzinfo=PARIS)
    assert slot_key(when) == "2024-05-06T06:00:00Z"
    assert parse_slot("2024-05-06T06:00:00Z") == utc("2024-05-06T06:00:00")
    assert parse_slot(manual_slot(utc("2024-05-06T06:00:00"))) is None
    assert manual_slot(utc("2024-05-06T06:00:00.5")) == "manual:2024-05-06T06:00:00.500000Z"
    assert parse_slot("brief:abc") is None


@pytest.mark.parametrize(("cron", "tz", "now", "latest", "following"), [
    (WEEKDAYS_8AM_PARIS, "Europe/Paris", "2024-05-06T06:00:00", "2024-05-06T06:00:00Z",
     "2024-05-07T06:00:00Z"),                                     # at the slot: it is the slot
    (WEEKDAYS_8AM_PARIS, "Europe/Paris", "2024-05-06T05:59:59", "2024-05-03T06:00:00Z",
     "2024-05-06T06:00:00Z"),                                     # Monday before 8: Friday's
    (WEEKDAYS_8AM_PARIS, "Europe/Paris", "2024-05-04T12:00:00", "2024-05-03T06:00:00Z",
     "2024-05-06T06:00:00Z"),                                     # Saturday
    ("*/15 * * * *", "UTC", "2024-05-06T10:07:30", "2024-05-06T10:00:00Z",
     "2024-05-06T10:15:00Z"),
    ("0 0 29 2 *", "UTC", "2025-01-01T00:00:00", "2024-02-29T00:00:00Z",
     "2028-02-29T00:00:00Z"),                                     # leap days only
    ("0 8 * * 0", "UTC", "2024-05-06T09:00:00", "2024-05-05T08:00:00Z",
     "2024-05-12T08:00:00Z"),                                     # 0 is Sunday, as in crontab
    ("0 8 * * 7", "UTC", "2024-05-06T09:00:00", "2024-05-05T08:00:00Z",
     "2024-05-12T08:00:00Z"),
    ("0 8 * * *", "America/New_York", "2024-03-09T14:00:00", "2024-03-09T13:00:00Z",
     "2024-03-10T12:00:00Z"),                                     # across the DST change
])
def test_latest_and_next_fire(cron: str, tz: str, now: str, latest: str,
                              following: str) -> None:
    trigger = cron_trigger(cron, ZoneInfo(tz))
    found = latest_fire(trigger, utc(now))
    assert found is not None and slot_key(found) == latest
    upcoming = next_fire(trigger, utc(now))
    assert upcoming is not None and slot_key(upcoming) == following


def test_fires_between_excludes_the_start_and_includes_the_end() -> None:
    trigger = cron_trigger("0 * * * *", ZoneInfo("UTC"))
    fires = list(fires_between(trigger, utc("2024-05-06T10:00:00"), utc("2024-05-06T13:00:00")))
    assert [slot_key(f) for f in fires] == [
        "2024-05-06T11:00:00Z", "2024-05-06T12:00:00Z", "2024-05-06T13:00:00Z"]


# --- catch-up after downtime -------------------------------------------------------------------

@pytest.mark.parametrize(("last", "now", "grace_minutes", "run", "missed", "older"), [
    (None, "2024-05-06T06:30:00", 60, "2024-05-06T06:00:00Z", [], False),  # fresh, in grace
    (None, "2024-05-06T08:00:00", 60, None, [], False),                  # fresh, too late
    ("2024-05-06T06:00:00", "2024-05-06T06:30:00", 60, None, [], False),  # already claimed
    ("2024-05-02T06:00:00", "2024-05-06T06:30:00", 60, "2024-05-06T06:00:00Z",
     ["2024-05-03T06:00:00Z"], False),                                    # Friday missed
    ("2024-05-02T06:00:00", "2024-05-06T08:00:00", 60, None,
     ["2024-05-03T06:00:00Z", "2024-05-06T06:00:00Z"], False),            # both too old
    ("2024-04-01T06:00:00", "2024-05-06T06:30:00", 60, "2024-05-06T06:00:00Z",
     ["2024-04-30T06:00:00Z", "2024-05-01T06:00:00Z", "2024-05-02T06:00:00Z",
      "2024-05-03T06:00:00Z"], True),                                     # a week listed
    ("2024-05-03T06:00:00", "2024-05-06T06:00:00", 0, "2024-05-06T06:00:00Z", [], False),
])
def test_plan_catch_up(last: str | None, now: str, grace_minutes: int, run: str | None,
                       missed: list[str], older: bool) -> None:
    trigger = cron_trigger(WEEKDAYS_8AM_PARIS, PARIS)
    plan = plan_catch_up(trigger, now=utc(now), last=utc(last) if last else None,
                         grace=timedelta(minutes=grace_minutes))
    assert (slot_key(plan.run) if plan.run else None) == run
    assert [slot_key(m) for m in plan.missed] == missed
    assert plan.older_missed is older


# --- configuration ----------------------------------------------------------------------------

MORNING: dict[str, Any] = {"id": "morning", "cron": WEEKDAYS_8AM_PARIS, "channel": "C0MARKETS",
                           "topics": ["Brent crude breaks $90"]}


def schedules(*entries: dict[str, Any], **settings: Any) -> tuple[ScheduleConfig, ...]:
    """The schedules as the settings load them (no environment, no file)."""
    return load_settings({}, schedules=list(entries), **settings).scheduling.schedules


def test_a_minimal_schedule_gets_the_defaults() -> None:
    (config,) = schedules(MORNING, timezone="Europe/Paris")
    assert (config.preset, config.mode, config.enabled) == ("market", None, True)
    assert config.timezone == "Europe/Paris" and config.misfire_grace_seconds == 3600
    assert config.grace == timedelta(hours=1) and config.max_signals == 20
    assert slot_key(next_fire(config.trigger(), utc("2024-05-06T07:00:00"))  # type: ignore[arg-type]
                    ) == "2024-05-07T06:00:00Z"


@pytest.mark.parametrize(("changes", "message"), [
    ({"cron": "0 8 * *"}, "cron: .*5 fields"),
    ({"cron": "0 8 * * 1-5", "timezone": "Mars/Olympus"}, "unknown time zone"),
    ({"id": "Morning Digest"}, "id: String should match pattern"),
    ({"source": "signals.txt"}, "either `topics`"),
    ({"topics": []}, "either `topics`"),
    ({"topics": ["ok", "  "]}, "empty strings"),
    ({"channel": "not a channel!"}, "not a channel"),
    ({"preset": "nope"}, "schedule 'morning': unknown preset 'nope'"),
    ({"mode": "shouting"}, "schedules.0.mode"),
    ({"misfire_grace_seconds": -1}, "schedules.0.misfire_grace_seconds"),
    ({"max_signal": 5}, "schedules.0.max_signal: unknown key 'max_signal' \\(did you mean "
                        "'max_signals'\\?\\)"),
])
def test_schedule_errors_are_clear(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        schedules({**MORNING, **changes})


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigurationError) as caught:
        schedules(MORNING, {"cron": "0 8 * * *"}, {**MORNING, "channel": "not a channel!"})
    text = str(caught.value)
    assert "schedules.1.id: Field required" in text and "schedules.1.channel" in text
    assert "schedules.2.channel: 'not a channel!' is not a channel" in text
    assert "\n" not in text


def test_a_schedule_id_used_twice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="the schedule id 'morning' is used twice"):
        schedules(MORNING, MORNING)


@pytest.mark.parametrize(("text", "expected"), [
    ("<#C0123ABC|general>", "C0123ABC"),
    ("<#C0123ABC>", "C0123ABC"),
    ("C0123ABC", "C0123ABC"),
    ("#eng-meetings", "eng-meetings"),
    ("general", "general"),
])
def test_parse_channel(text: str, expected: str) -> None:
    assert parse_channel(text) == expected


def test_a_channel_mention_in_the_config_is_kept_as_its_id() -> None:
    config = ScheduleConfig.model_validate({**MORNING, "channel": "<#C0MARKETS|markets>"})
    assert config.channel == "C0MARKETS"


# --- signal sources ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "signals", "problems"), [
    ("Oil up\nRates down\n", [Signal("Oil up"), Signal("Rates down")], []),
    ("# morning list\n\n   Oil up  \n", [Signal("Oil up")], []),
    ('{"title": "Oil up", "context": "Brent +3%"}', [Signal("Oil up", "Brent +3%")], []),
    ('{"title": "X", "context": {"k": 1}}', [Signal("X", '{"k": 1}')], []),
    ('{"title": ""}', [], ["src line 1: the JSON object has no non-empty `title`"]),
    ('{"title": 3}', [], ["src line 1: the JSON object has no non-empty `title`"]),
    ("a\n{oops\n", [Signal("a")], ["src line 2: not valid JSON"]),
    ('a\n{"title": "b"}\n', [Signal("a"), Signal("b")], []),
])
def test_parse_signals(text: str, signals: list[Signal], problems: list[str]) -> None:
    found, reported = parse_signals(text, origin="src")
    assert found == signals
    assert len(reported) == len(problems)
    for seen, expected in zip(reported, problems, strict=True):
        assert seen.startswith(expected)


# --- briefs -----------------------------------------------------------------------------------

NOW = utc("2024-05-06T07:00:00")   # 09:00 in Paris


@pytest.mark.parametrize(("text", "topic", "at", "channel"), [
    ("brief Adopt Kafka at 09:30", "Adopt Kafka", "2024-05-06T09:30", None),
    ("brief Adopt Kafka at 08:30", "Adopt Kafka", "2024-05-07T08:30", None),   # past: tomorrow
    ("brief Adopt Kafka at 09:00", "Adopt Kafka", "2024-05-07T09:00", None),   # now: tomorrow
    ("brief Ship at scale at 14:05 in <#C0123ABC|general>", "Ship at scale", "2024-05-06T14:05",
     "C0123ABC"),
    ("brief Rollout plan at 2:30pm in #eng-meetings", "Rollout plan", "2024-05-06T14:30",
     "eng-meetings"),
    ("Adopt Kafka at 9h30", "Adopt Kafka", "2024-05-06T09:30", None),
    ("BRIEF   Move billing?   at 23:59   in C0ABCDEF  ", "Move billing?", "2024-05-06T23:59",
     "C0ABCDEF"),
    ("brief Midnight deploy at 12:15am", "Midnight deploy", "2024-05-07T00:15", None),
])
def test_parse_brief(text: str, topic: str, at: str, channel: str | None) -> None:
    command = parse_brief(text, now=NOW, tz=PARIS)
    assert command.topic == topic
    assert command.at == datetime.fromisoformat(at).replace(tzinfo=PARIS)
    assert command.channel == channel


@pytest.mark.parametrize(("text", "message"), [
    ("brief Adopt Kafka", "could not read a time"),
    ("brief Adopt Kafka at 25:00", "not a time of day"),
    ("brief Adopt Kafka at 09:75", "not a time of day"),
    ("brief Adopt Kafka at 13:00pm", "12-hour clock"),
    ("brief at 09:30", "what should the brief be about"),
    ("brief Adopt Kafka at 09:30 in <@U123>", "not a channel"),
    ("", "could not read a time"),
])
def test_parse_brief_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        parse_brief(text, now=NOW, tz=PARIS)


@pytest.mark.parametrize(("at", "now", "depth", "timeout", "start"), [
    ("10:00", "09:00", 5, 60.0, "09:45"),     # 5 rounds x 60 s < 15 min: the minimum lead
    ("10:00", "09:00", 30, 60.0, "09:30"),    # 30 rounds x 60 s: longer than the minimum
    ("09:10", "09:00", 5, 60.0, "09:00"),     # late: start now, never in the past
    ("10:00", "09:00", 0, 60.0, "09:45"),
])
def test_brief_start(at: str, now: str, depth: int, timeout: float, start: str) -> None:
    day = "2024-05-06T"
    found = brief_start(utc(day + at), now=utc(day + now), depth=depth, call_timeout=timeout)
    assert found == utc(day + start)
    assert BRIEF_MIN_LEAD == timedelta(minutes=15)
