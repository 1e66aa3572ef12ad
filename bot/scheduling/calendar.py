"""Schedules as values, and the pure maths around them: cron slots, catch-up plans, signal lines,
and the `brief TOPIC at 09:30 [in #channel]` command. No I/O here; `bot/scheduler.py` does that.

Cron expressions use crontab(5) semantics: five fields, day of week 0 or 7 = Sunday. APScheduler
3 numbers weekdays from Monday = 0, so the day-of-week field is rewritten to names before
`CronTrigger.from_crontab` sees it ("1-5" becomes "mon,tue,wed,thu,fri"). When both day of month
and day of week are restricted, APScheduler fires only when both match (crontab: either).

A slot is the scheduled fire time in UTC, `2024-05-06T06:00:00Z`: fixed width, so slots sort as
text, and every replica computes the same one from the trigger (never from "now").
"""

from __future__ import annotations

import argparse
import json
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.domain import Mode
from engine.errors import ConfigurationError, InvalidRequest

if TYPE_CHECKING:
    from rich.console import Console

    from engine.settings import Settings

SLOT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MANUAL_PREFIX = "manual:"
ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
MISSED_LOOKBACK = timedelta(days=7)       # older missed slots are summarised, not listed
MAX_MISSED_LISTED = 50
BRIEF_MIN_LEAD = timedelta(minutes=15)
_ONE_MICRO = timedelta(microseconds=1)
_SEARCH_WINDOWS = tuple(timedelta(hours=h) for h in (1, 6, 48, 24 * 9, 24 * 70, 24 * 400,
                                                       24 * 366 * 9))
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")   # crontab order, 0 = Sunday
_APS_ORDER = (1, 2, 3, 4, 5, 6, 0)                                 # APScheduler: Monday first
_CHANNEL_MENTION = re.compile(r"^<#(?P<id>[CG][A-Z0-9]+)(?:\|[^>]*)?>$")
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")
_CHANNEL_NAME = re.compile(r"^#?(?P<name>[a-z0-9][a-z0-9._-]{0,79})$")


# --------------------------------------------------------------------------------------------
# cron


def _weekday(token: str) -> int:
    """A crontab weekday (0-7 or a name) as 0-6 with 0 = Sunday."""
    name = token.strip().lower()
    if name in _DAY_NAMES:
        return _DAY_NAMES.index(name)
    if not name.isdigit() or int(name) > 7:
        raise ValueError(f"day of week {token!r} is not 0-7 or a name like mon")
    return int(token) % 7


def _weekday_item(item: str) -> set[int]:
    """One comma item of the day-of-week field (`*`, `3`, `mon-fri`, `1-5/2`, `*/2`)."""
    span, _, step_text = item.partition("/")
    step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else None
    if step_text and step is None:
        raise ValueError(f"bad step in day of week {item!r}")
    if span == "*":
        first, last = 0, 6
    elif "-" in span:
        low, high = span.split("-", 1)
        first, last = _weekday(low), _weekday(high)
        if last == 0 and first > 0:  # "5-7", "fri-sun": up to Sunday at the end of the week
            last = 7
        if last < first:
            raise ValueError(f"day-of-week range {span!r} runs backwards")
    else:
        first = _weekday(span)
        last = 6 if step else first
    return {day % 7 for day in range(first, last + 1, step or 1)}


def crontab_weekdays(field: str) -> str:
    """A crontab day-of-week field in APScheduler 3's terms: `*`, or day names Monday first."""
    if field == "*":
        return "*"
    days: set[int] = set()
    for item in field.split(","):
        if not item:
            raise ValueError(f"empty item in day of week {field!r}")
        days |= _weekday_item(item)
    return ",".join(_DAY_NAMES[d] for d in _APS_ORDER if d in days)


def cron_trigger(expr: str, tz: ZoneInfo) -> CronTrigger:
    """The APScheduler trigger for a 5-field crontab expression (ValueError with the reason)."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(f"a cron expression has 5 fields (minute hour day month weekday); "
                         f"{expr!r} has {len(fields)}")
    fields[4] = crontab_weekdays(fields[4])
    trigger = CronTrigger.from_crontab(" ".join(fields), timezone=tz)
    if trigger.get_next_fire_time(None, datetime(2024, 1, 1, tzinfo=UTC)) is None:
        raise ValueError(f"{expr!r} never fires")
    return trigger


def slot_key(when: datetime) -> str:
    """The slot of a fire time: UTC, second precision, fixed width."""
    return when.astimezone(UTC).strftime(SLOT_FORMAT)


def manual_slot(now: datetime) -> str:
    """The slot of an operator's `run now`: its own key, never a cron slot."""
    return MANUAL_PREFIX + now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_slot(slot: str) -> datetime | None:
    """The fire time of a cron slot; None for manual, brief or foreign slots."""
    try:
        return datetime.strptime(slot, SLOT_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def fires_between(trigger: CronTrigger, after: datetime, until: datetime) -> Iterator[datetime]:
    """Fire times t with after < t <= until, oldest first."""
    fire = trigger.get_next_fire_time(None, after + _ONE_MICRO)
    while fire is not None and fire <= until:
        yield fire
        fire = trigger.get_next_fire_time(fire, fire)


def latest_fire(trigger: CronTrigger, now: datetime) -> datetime | None:
    """The most recent fire time at or before `now` (None if none within about nine years).

    Looks back through growing windows, so a per-minute cron and a yearly one both cost a few
    dozen trigger steps."""
    for window in _SEARCH_WINDOWS:
        last = deque(fires_between(trigger, now - window, now), maxlen=1)
        if last:
            return last[0]
    return None


def next_fire(trigger: CronTrigger, now: datetime) -> datetime | None:
    """The next fire time strictly after `now`."""
    fire: datetime | None = trigger.get_next_fire_time(None, now + _ONE_MICRO)
    return fire


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What to do on start: run `run` (a slot within grace), report `missed`, summarise the rest."""

    run: datetime | None
    missed: tuple[datetime, ...] = ()
    older_missed: bool = False     # more missed slots before MISSED_LOOKBACK, not listed


def plan_catch_up(trigger: CronTrigger, *, now: datetime, last: datetime | None,
                  grace: timedelta) -> CatchUp:
    """The catch-up after downtime, given the last slot this schedule claimed (None: no history).

    The most recent slot <= now runs once when within `grace`; the slots between `last` and it
    are missed: reported, never run. Without history nothing counts as missed."""
    latest = latest_fire(trigger, now)
    if latest is None or (last is not None and latest <= last):
        return CatchUp(run=None)
    run = latest if now - latest <= grace else None
    if last is None:
        return CatchUp(run=run)
    since = max(last, latest - MISSED_LOOKBACK)
    missed: deque[datetime] = deque(fires_between(trigger, since, latest),
                                    maxlen=MAX_MISSED_LISTED)
    if run is not None and missed and missed[-1] == run:
        missed.pop()
    older = since > last and next(fires_between(trigger, last, since), None) is not None
    return CatchUp(run=run, missed=tuple(missed), older_missed=older)


# --------------------------------------------------------------------------------------------
# configuration


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name like Europe/Paris)"
                         ) from None


def parse_channel(text: str) -> str:
    """A channel as Slack accepts it: `<#C123|general>` and `C123` give the id, `#general` the
    name. ValueError for anything else."""
    text = text.strip()
    if match := _CHANNEL_MENTION.match(text):
        return match["id"]
    if _CHANNEL_ID.match(text):
        return text
    if match := _CHANNEL_NAME.match(text):
        return match["name"]
    raise ValueError(f"{text!r} is not a channel: use its id (C0123ABC) or #name")


class ScheduleConfig(BaseModel):
    """One `[[schedules]]` entry of dialectic.toml: a digest of signals on a cron slot."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(pattern=ID_PATTERN)
    cron: str
    timezone: str = "UTC"
    preset: str = "market"
    mode: Mode | None = None
    channel: str
    topics: tuple[str, ...] = ()
    source: str | None = None          # a file path or an http(s) URL, read at firing time
    enabled: bool = True
    misfire_grace_seconds: int = Field(default=3600, ge=0, le=7 * 86400)
    max_signals: int = Field(default=20, ge=1, le=100)

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        cron_trigger(value, ZoneInfo("UTC"))  # raises ValueError with the reason
        return " ".join(value.split())

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        _zone(value)
        return value

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        return parse_channel(value)

    @field_validator("topics")
    @classmethod
    def _topics(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        topics = tuple(t.strip() for t in value)
        if any(not t for t in topics):
            raise ValueError("topics must not be empty strings")
        return topics

    @model_validator(mode="after")
    def _check(self) -> ScheduleConfig:
        if bool(self.topics) == bool(self.source):
            raise ValueError("give either `topics` (a list) or `source` (a file or URL), "
                             "not both and not neither")
        return self

    @property
    def tz(self) -> ZoneInfo:
        return _zone(self.timezone)

    def trigger(self) -> CronTrigger:
        return cron_trigger(self.cron, self.tz)

    @property
    def grace(self) -> timedelta:
        return timedelta(seconds=self.misfire_grace_seconds)


def _problems(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def load_schedules(raw: Sequence[Mapping[str, Any]], *, default_timezone: str = "UTC",
                   presets: Sequence[str] | None = None) -> tuple[ScheduleConfig, ...]:
    """Validate the raw `schedules` settings; ConfigurationError naming every problem found."""
    found: list[ScheduleConfig] = []
    problems: list[str] = []
    for index, entry in enumerate(raw):
        label = f"schedules[{index}]" + (f" ({entry['id']!r})" if "id" in entry else "")
        try:
            config = ScheduleConfig.model_validate({"timezone": default_timezone, **entry})
        except ValidationError as exc:
            problems.append(f"{label}: {_problems(exc)}")
            continue
        if presets is not None and config.preset not in presets:
            problems.append(f"{label}: unknown preset {config.preset!r}; choose one of: "
                            f"{', '.join(sorted(presets))}")
        if any(c.id == config.id for c in found):
            problems.append(f"{label}: the id {config.id!r} is used twice")
        found.append(config)
    if problems:
        raise ConfigurationError("invalid schedule configuration: " + " | ".join(problems))
    return tuple(found)


# --------------------------------------------------------------------------------------------
# signals


@dataclass(frozen=True, slots=True)
class Signal:
    """One thing a digest debates: a title (the proposition) and optional context."""

    title: str
    context: str = ""


def _json_signal(line: str) -> Signal:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("a JSON line must be an object with a title")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ValueError("the JSON object has no non-empty `title`")
    context = data.get("context", "")
    if not isinstance(context, str):
        context = json.dumps(context, ensure_ascii=False)
    return Signal(title=title.strip(), context=context.strip())


def parse_signals(text: str, *, origin: str) -> tuple[list[Signal], list[str]]:
    """Signals from a source's text: one per line, or JSON lines `{"title": .., "context": ..}`.

    Blank lines and `#` comments are ignored. A bad line is a problem ("<origin> line 3: ...")
    reported alongside the good signals, never dropped silently."""
    signals: list[Signal] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("{"):
            signals.append(Signal(title=line))
            continue
        try:
            signals.append(_json_signal(line))
        except ValueError as exc:
            problems.append(f"{origin} line {number}: {exc}")
    return signals, problems


# --------------------------------------------------------------------------------------------
# briefs

_BRIEF = re.compile(
    r"^\s*(?:brief\s+)?(?P<topic>\S.*?)\s+at\s+(?P<hour>\d{1,2})[:h.](?P<minute>\d{2})"
    r"\s*(?P<half>[ap]\.?m\.?)?(?:\s+in\s+(?P<channel>\S+))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
BRIEF_USAGE = "brief TOPIC at HH:MM [in #channel]   e.g. brief Adopt Kafka for billing at 09:30"


@dataclass(frozen=True, slots=True)
class BriefCommand:
    """A parsed brief request: what, when (aware, in the configured zone), where (None: here)."""

    topic: str
    at: datetime
    channel: str | None = None


def _clock_time(hour: int, minute: int, half: str | None) -> time:
    if half:
        if not 1 <= hour <= 12:
            raise InvalidRequest(f"{hour} is not an hour on a 12-hour clock")
        hour = hour % 12 + (12 if half.lower().startswith("p") else 0)
    if hour > 23 or minute > 59:
        raise InvalidRequest(f"{hour:02d}:{minute:02d} is not a time of day (use HH:MM, 24-hour)")
    return time(hour, minute)


def meeting_time(at: time, *, now: datetime, tz: ZoneInfo) -> datetime:
    """`at` today in `tz`, or tomorrow when that moment is already past."""
    local_now = now.astimezone(tz)

    def on(day: date) -> datetime:
        return datetime.combine(day, at, tzinfo=tz)

    today = on(local_now.date())
    return today if today > local_now else on(local_now.date() + timedelta(days=1))


def parse_brief(text: str, *, now: datetime, tz: ZoneInfo) -> BriefCommand:
    """Parse `brief TOPIC at 09:30 [in #channel]` (InvalidRequest with the usage if it is not)."""
    match = _BRIEF.match(text)
    if match is None:
        raise InvalidRequest(f"I could not read a time in that: use `{BRIEF_USAGE}`")
    clock = _clock_time(int(match["hour"]), int(match["minute"]), match["half"])
    channel = None
    if match["channel"]:
        try:
            channel = parse_channel(match["channel"])
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
    topic = match["topic"].strip()
    if topic.lower() == "brief":
        raise InvalidRequest(f"what should the brief be about? use `{BRIEF_USAGE}`")
    return BriefCommand(topic=topic, at=meeting_time(clock, now=now, tz=tz), channel=channel)


def brief_start(at: datetime, *, now: datetime, depth: int, call_timeout: float,
                min_lead: timedelta = BRIEF_MIN_LEAD) -> datetime:
    """When a brief's debate starts so it finishes before `at`: the larger of `min_lead` and
    the plan's dependent rounds times one call's timeout, ahead of it; never in the past."""
    lead = max(min_lead, timedelta(seconds=depth * call_timeout))
    return max(at - lead, now)


# --------------------------------------------------------------------------------------------
# command line: the parser lives here, light to import, because `dialectic` builds it on every
# run; the work happens in bot.scheduler, imported only for `dialectic schedule ...`.


def add_cli(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `dialectic schedule list` and `dialectic schedule run ID`."""
    parser = sub.add_parser("schedule", help="scheduled digests: list them, or fire one now")
    actions = parser.add_subparsers(dest="schedule_action", required=True)
    actions.add_parser("list", help="schedules, their next firing and pause state")
    run = actions.add_parser("run", help="fire a schedule now and wait for its digest")
    run.add_argument("schedule_id")
    run.add_argument("--no-worker", action="store_true",
                     help="do not run debates here: leave them to `dialectic worker` processes")


def handle(settings: Settings, args: argparse.Namespace, console: Console) -> int | None:
    """Run a `schedule` command; None for any other command."""
    if args.command != "schedule":
        return None
    from bot.scheduling.scheduler import run_cli

    return run_cli(settings, args, console)


__all__ = [
    "BRIEF_MIN_LEAD",
    "BRIEF_USAGE",
    "MANUAL_PREFIX",
    "BriefCommand",
    "CatchUp",
    "ScheduleConfig",
    "Signal",
    "add_cli",
    "brief_start",
    "cron_trigger",
    "crontab_weekdays",
    "fires_between",
    "handle",
    "latest_fire",
    "load_schedules",
    "manual_slot",
    "meeting_time",
    "next_fire",
    "parse_brief",
    "parse_channel",
    "parse_signals",
    "parse_slot",
    "plan_catch_up",
    "slot_key",
]
