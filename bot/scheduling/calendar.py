"""The calendar of schedules, pure maths: cron triggers, slots and catch-up plans. No I/O.

Cron expressions use crontab(5) semantics: five fields, day of week 0 or 7 = Sunday. APScheduler
3 numbers weekdays from Monday = 0, so the day-of-week field is rewritten to names before
`CronTrigger.from_crontab` sees it ("1-5" becomes "mon,tue,wed,thu,fri"). When both day of month
and day of week are restricted, APScheduler fires only when both match (crontab: either).

A slot is the scheduled fire time in UTC, `2024-05-06T06:00:00Z`: fixed width, so slots sort as
text, and every replica computes the same one from the trigger (never from "now").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

SLOT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MANUAL_PREFIX = "manual:"
MISSED_LOOKBACK = timedelta(days=7)       # older missed slots are summarised, not listed
MAX_MISSED_LISTED = 50
_ONE_MICRO = timedelta(microseconds=1)
_SEARCH_WINDOWS = tuple(timedelta(hours=h) for h in (1, 6, 48, 24 * 9, 24 * 70, 24 * 400,
                                                       24 * 366 * 9))
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")   # crontab order, 0 = Sunday
_APS_ORDER = (1, 2, 3, 4, 5, 6, 0)                                 # APScheduler: Monday first


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


