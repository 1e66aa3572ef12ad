"""Pure schedule maths: cron fire times (weekdays, day of month or week, DST changes) and the
APScheduler trigger over them, slots, catch-up plans, configuration errors, signal lines, the
brief command and a brief's start time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.scheduling.briefs import BRIEF_MIN_LEAD, brief_start, parse_brief
from bot.scheduling.calendar import (
    MAX_MISSED_LISTED,
    CronCalendar,
    manual_slot,
    parse_cron,
    parse_slot,
    plan_catch_up,
    slot_key,
)
from bot.scheduling.config import ScheduleConfig, parse_channel
from bot.scheduling.scheduler import CalendarTrigger
from bot.scheduling.signals import Signal, parse_signals
from bot.settings import load_settings
from engine.errors import ConfigurationError, InvalidRequest

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")
WEEKDAYS_8AM_PARIS = "0 8 * * 1-5"   # 06:00 UTC in May (CEST)
TICK = timedelta(microseconds=1)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fire_times(calendar: CronCalendar, after: datetime) -> Iterator[datetime]:
    """Every fire time after `after`, by repeated `next_fire`."""
    fire = calendar.next_fire(after)
    while fire is not None:
        yield fire
        fire = calendar.next_fire(fire)


def first_fires(cron: str, tz: ZoneInfo, after: str, count: int) -> list[datetime]:
    times = fire_times(parse_cron(cron, tz), utc(after))
    return [next(times) for _ in range(count)]


# --- cron: crontab(5) meaning -----------------------------------------------------------------

@pytest.mark.parametrize(("weekday", "days"), [
    ("*", "mon tue wed thu fri sat sun"),
    ("1-5", "mon tue wed thu fri"),
    ("0", "sun"),
    ("7", "sun"),
    ("0,7", "sun"),
    ("5-7", "fri sat sun"),
    ("fri-sun", "fri sat sun"),
    ("*/2", "sun tue thu sat"),           # crontab: 0,2,4,6
    ("1,3,5", "mon wed fri"),
    ("SAT,sun", "sat sun"),
    ("0-2", "sun mon tue"),
    ("mon-fri/2", "mon wed fri"),
    ("3/2", "wed fri"),
    ("5-1", "fri sat sun mon"),           # croniter reads a backwards range round the week end
])
def test_day_of_week_keeps_crontab_meaning(weekday: str, days: str) -> None:
    fortnight = first_fires(f"0 8 * * {weekday}", ZoneInfo("UTC"), "2024-05-05T12:00:00", 14)
    week = {fire.strftime("%a").lower() for fire in fortnight if fire < utc("2024-05-12T12:00")}
    assert week == set(days.split())


@pytest.mark.parametrize(("cron", "dates"), [
    ("0 8 1 * 1", "05-01 05-06 05-13 05-20 05-27 06-01 06-03"),   # the 1st, or a Monday
    ("0 8 1-7 * 1", "05-01 05-02 05-03 05-04 05-05 05-06 05-07 05-13 05-20"),  # not 1st Monday
    ("0 8 13 * 5", "05-03 05-10 05-13 05-17 05-24 05-31 06-07"),  # Fridays and the 13th
    ("0 8 */2 * 1", "05-13 05-27 06-03 06-17"),   # day of month starts with *: both must match
    ("0 8 * * 1", "05-06 05-13 05-20 05-27"),
    ("0 8 1 * *", "05-01 06-01 07-01"),
])
def test_day_of_month_or_day_of_week(cron: str, dates: str) -> None:
    expected = dates.split()
    fires = first_fires(cron, ZoneInfo("UTC"), "2024-04-30T12:00:00", len(expected))
    assert [f"{fire:%m-%d}" for fire in fires] == expected


@pytest.mark.parametrize(("expr", "message"), [
    ("0 8 * *", "5 fields"),
    ("0 8 * * * *", "5 fields"),
    ("@daily", "5 fields"),
    ("0 25 * * *", "out of range"),
    ("x 8 * * *", "not acceptable"),
    ("0 8 31 2 *", "never fires"),
    ("0 8 30 2 *", "never fires"),
    ("0 8 * * 8", "out of range"),
    ("0 8 * * mon-", "not acceptable"),
    ("0 8 * * 1/0", "step '0'"),
    ("0 8 * * 1,,2", "not acceptable"),
    ("0 8 * * */x", "not acceptable"),
])
def test_cron_errors_say_why(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_cron(expr, PARIS)
    if "fields" not in message and "never" not in message:
        assert "minute hour day-of-month month day-of-week" in str(caught.value)


def test_parse_cron_normalises_spaces() -> None:
    assert parse_cron("  0  8 * *   1-5 ", PARIS) == CronCalendar("0 8 * * 1-5", PARIS)


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
    ("*/15 * * * *", "UTC", "2024-05-06T10:15:00", "2024-05-06T10:15:00Z",
     "2024-05-06T10:30:00Z"),                                     # on a quarter
    ("*/15 * * * *", "UTC", "2024-05-06T23:59:59.999999", "2024-05-06T23:45:00Z",
     "2024-05-07T00:00:00Z"),                                     # across midnight
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
    calendar = parse_cron(cron, ZoneInfo(tz))
    found = calendar.latest_fire(utc(now))
    assert found is not None and slot_key(found) == latest
    upcoming = calendar.next_fire(utc(now))
    assert upcoming is not None and slot_key(upcoming) == following


# Each case: the fire times after `after`, as UTC slots. crontab(5) across a DST change: a
# fixed time the clock skips fires right after the change, a fixed time the clock repeats fires
# once; a wildcard minute or hour follows the clock (skipped with the gap, again when repeated).
DST_CASES = [
    pytest.param("30 2 * * *", NEW_YORK, "2024-03-09T12:00:00",
                 ["2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z"], id="skipped-fixed-fires-at-3"),
    pytest.param("15 1-3 * * *", NEW_YORK, "2024-03-10T00:00:00",
                 ["2024-03-10T06:15:00Z", "2024-03-10T07:00:00Z", "2024-03-10T07:15:00Z",
                  "2024-03-11T05:15:00Z"], id="skipped-fixed-hour-range"),
    pytest.param("30 * * * *", NEW_YORK, "2024-03-10T05:00:00",
                 ["2024-03-10T05:30:00Z", "2024-03-10T06:30:00Z", "2024-03-10T07:30:00Z"],
                 id="skipped-wildcard-hour"),
    pytest.param("*/30 2 * * *", NEW_YORK, "2024-03-09T12:00:00",
                 ["2024-03-11T06:00:00Z", "2024-03-11T06:30:00Z"], id="skipped-wildcard-minute"),
    pytest.param("30 1 * * *", NEW_YORK, "2024-11-02T12:00:00",
                 ["2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z"], id="repeated-fixed-once"),
    pytest.param("*/30 * * * *", NEW_YORK, "2024-11-03T04:50:00",
                 ["2024-11-03T05:00:00Z", "2024-11-03T05:30:00Z", "2024-11-03T06:00:00Z",
                  "2024-11-03T06:30:00Z", "2024-11-03T07:00:00Z"], id="repeated-wildcard-twice"),
    pytest.param("0 8 * * *", NEW_YORK, "2024-11-02T00:00:00",
                 ["2024-11-02T12:00:00Z", "2024-11-03T13:00:00Z"], id="daily-across-fall-back"),
    pytest.param("30 2 * * *", PARIS, "2024-03-30T12:00:00",
                 ["2024-03-31T01:00:00Z", "2024-04-01T00:30:00Z"], id="paris-spring"),
    pytest.param("30 2 * * *", PARIS, "2024-10-26T12:00:00",
                 ["2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"], id="paris-autumn"),
    pytest.param("0 */2 * * *", PARIS, "2024-03-30T22:30:00",
                 ["2024-03-30T23:00:00Z", "2024-03-31T02:00:00Z", "2024-03-31T04:00:00Z"],
                 id="paris-every-2-hours-spring"),
    pytest.param(WEEKDAYS_8AM_PARIS, PARIS, "2024-03-29T00:00:00",
                 ["2024-03-29T07:00:00Z", "2024-04-01T06:00:00Z"], id="paris-weekdays-spring"),
    pytest.param("45 1 * * *", ZoneInfo("Australia/Lord_Howe"), "2024-04-06T00:00:00",
                 ["2024-04-06T14:45:00Z", "2024-04-07T15:15:00Z"], id="half-hour-change-once"),
]


@pytest.mark.parametrize(("cron", "tz", "after", "slots"), DST_CASES)
def test_fire_times_across_dst_changes(cron: str, tz: ZoneInfo, after: str,
                                       slots: list[str]) -> None:
    calendar = parse_cron(cron, tz)
    forward = first_fires(cron, tz, after, len(slots))
    assert [slot_key(fire) for fire in forward] == slots
    backward = calendar.fires_before(forward[-1] + TICK)
    assert [slot_key(next(backward)) for _ in slots] == slots[::-1]
    for earlier, later in pairwise(forward):      # between two fires, each names the same pair
        for now in (earlier, earlier + (later - earlier) / 2, later - TICK):
            assert calendar.latest_fire(now) == earlier
            assert calendar.next_fire(now) == later


@pytest.mark.parametrize(("cron", "tz", "after", "slots"), DST_CASES)
def test_apscheduler_fires_the_calendar(cron: str, tz: ZoneInfo, after: str,
                                        slots: list[str]) -> None:
    trigger = CalendarTrigger(parse_cron(cron, tz))
    fire = trigger.get_next_fire_time(None, utc(after))
    fired = [fire]
    while len(fired) < len(slots):
        fire = trigger.get_next_fire_time(fire, fire)
        fired.append(fire)
    assert [slot_key(f) for f in fired if f is not None] == slots
    late = utc(slots[-1]) + timedelta(hours=1)   # a late process still sees each owed time
    assert trigger.get_next_fire_time(utc(slots[0]), late) == utc(slots[1])
    assert trigger.get_next_fire_time(None, utc(slots[0])) == utc(slots[0])


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
    calendar = parse_cron(WEEKDAYS_8AM_PARIS, PARIS)
    plan = plan_catch_up(calendar, now=utc(now), last=utc(last) if last else None,
                         grace=timedelta(minutes=grace_minutes))
    assert (slot_key(plan.run) if plan.run else None) == run
    assert [slot_key(m) for m in plan.missed] == missed
    assert plan.older_missed is older


def test_catch_up_lists_the_newest_missed_slots_and_says_there_were_more() -> None:
    calendar = parse_cron("*/15 * * * *", ZoneInfo("UTC"))
    plan = plan_catch_up(calendar, now=utc("2024-05-06T00:05:00"),
                         last=utc("2024-05-05T00:00:00"), grace=timedelta(hours=1))
    assert plan.run == utc("2024-05-06T00:00:00")
    assert len(plan.missed) == MAX_MISSED_LISTED and plan.older_missed is True
    assert (slot_key(plan.missed[0]), slot_key(plan.missed[-1])) == (
        "2024-05-05T11:30:00Z", "2024-05-05T23:45:00Z")


def test_catch_up_across_a_fall_back_misses_a_repeated_time_once() -> None:
    calendar = parse_cron("30 1 * * *", NEW_YORK)
    plan = plan_catch_up(calendar, now=utc("2024-11-04T07:00:00"),
                         last=utc("2024-11-02T05:30:00"), grace=timedelta(hours=1))
    assert plan.run == utc("2024-11-04T06:30:00")
    assert [slot_key(m) for m in plan.missed] == ["2024-11-03T05:30:00Z"]


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
    assert config.calendar == CronCalendar(WEEKDAYS_8AM_PARIS, PARIS)
    assert config.calendar.next_fire(utc("2024-05-06T07:00:00")) == utc("2024-05-07T06:00:00")


def test_loading_settings_checks_crons_without_importing_apscheduler() -> None:
    """The CLI loads the settings on every command: checking a cron stays cheap."""
    code = ("import sys\n"
            "from bot.settings import load_settings\n"
            "load_settings({}, schedules=[{'id': 'm', 'cron': '0 8 * * 1-5', 'channel': 'C0M',"
            " 'topics': ['x']}])\n"
            "print(sorted(m for m in sys.modules if m.startswith('apscheduler')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], check=True, timeout=60)
    assert done.stdout.strip() == "[]"


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
