"""The calendar of schedules, pure maths: cron fire times, slots and catch-up plans. No I/O.

A `CronCalendar` is a 5-field crontab expression in a time zone. croniter computes its fire
times with crontab(5)'s meaning: day of week 0 or 7 is Sunday; when day of month and day of
week are both restricted (neither starts with `*`) a day matching either fires, otherwise both
must match. Across a DST change it keeps cron's rule: a fixed time the clock skips fires right
after the change and a fixed time the clock repeats fires once; a wildcard minute or hour
(`*/15 * * * *`, `0 * * * *`) follows the clock, skipping what is skipped, firing again what is
repeated. APScheduler fires from this same calendar (bot/scheduling/scheduler.py), and
`latest_fire` is confirmed on the forward walk APScheduler takes, so they name the same slot.

A slot is the scheduled fire time in UTC, `2024-05-06T06:00:00Z`: fixed width, so slots sort as
text, and every replica computes the same one from the calendar (never from "now").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import chain, islice
from zoneinfo import ZoneInfo

CRON_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
SLOT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MANUAL_PREFIX = "manual:"
MISSED_LOOKBACK = timedelta(days=7)       # older missed slots are summarised, not listed
MAX_MISSED_LISTED = 50
_TICK = timedelta(microseconds=1)
_HINTS = 8     # croniter's backward steps tried before giving up on a latest fire
_PROBE = datetime(2024, 1, 1, tzinfo=UTC)

Clock = Callable[[], datetime]   # "now", injected so tests set it


# --------------------------------------------------------------------------------------------
# cron


@dataclass(frozen=True, slots=True)
class CronCalendar:
    """The fire times of a 5-field crontab expression in a time zone, as aware UTC datetimes.

    `parse_cron` checks an expression and builds its calendar."""

    expr: str
    tz: ZoneInfo

    def _walk(self, start: datetime, *, backwards: bool = False) -> Iterator[datetime]:
        """Fire times strictly after `start` (before it, `backwards`), nearest first."""
        # lazy: croniter and dateutil load when a calendar is first walked (a schedule checked
        # or fired), never in a process that has no schedule (`dialectic run`)
        from croniter import CroniterBadDateError, croniter

        minute, hour, day, _, weekday = self.expr.split()
        day_or = not (day.startswith("*") or weekday.startswith("*"))
        wildcard = minute.startswith("*") or hour.startswith("*")
        steps = croniter(self.expr, start.astimezone(self.tz), day_or=day_or)
        step = steps.get_prev if backwards else steps.get_next
        while True:
            try:
                local: datetime = step(datetime)
            except CroniterBadDateError:  # none within croniter's search horizon (50 years)
                return
            if wildcard:   # by the wall clock: drop a skipped time croniter moved past the gap
                fires = croniter.match(self.expr, local.replace(tzinfo=None), day_or=day_or)
            else:          # a fixed time fires once: not again when the clock repeats it
                fires = local.astimezone(UTC).astimezone(self.tz).fold == 0
            if fires:
                yield local.astimezone(UTC)

    def next_fire(self, after: datetime) -> datetime | None:
        """The first fire time strictly after `after`."""
        return next(self._walk(after), None)

    def fires_before(self, before: datetime) -> Iterator[datetime]:
        """Fire times strictly before `before`, newest first."""
        return self._walk(before, backwards=True)

    def latest_fire(self, now: datetime) -> datetime | None:
        """The last fire time at or before `now`.

        croniter's backward step finds it; the forward walk (the one APScheduler fires from)
        confirms it, so the result is always a time `next_fire` yields."""
        for hint in islice(self.fires_before(now + _TICK), _HINTS):
            latest = None
            for fire in self._walk(hint - _TICK):
                if fire > now:
                    break
                latest = fire
            if latest is not None:
                return latest
        return None


def parse_cron(expr: str, tz: ZoneInfo) -> CronCalendar:
    """The calendar of a 5-field crontab expression (ValueError saying why it is not one)."""
    fields = expr.split()
    if len(fields) != len(CRON_FIELDS):
        raise ValueError(f"a cron expression has 5 fields ({' '.join(CRON_FIELDS)}); "
                         f"{expr!r} has {len(fields)}")
    from croniter import CroniterError  # lazy, as in CronCalendar._walk

    calendar = CronCalendar(" ".join(fields), tz)
    try:
        first = calendar.next_fire(_PROBE)
    except CroniterError as exc:
        raise ValueError(f"{exc} (the fields: {' '.join(CRON_FIELDS)})") from None
    if first is None:
        raise ValueError(f"{expr!r} never fires")
    return calendar


# --------------------------------------------------------------------------------------------
# slots


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


# --------------------------------------------------------------------------------------------
# catch-up


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What to do on start: run `run` (a slot within grace), report `missed`, summarise the rest."""

    run: datetime | None
    missed: tuple[datetime, ...] = ()
    older_missed: bool = False     # earlier missed slots than those listed, not listed


def plan_catch_up(calendar: CronCalendar, *, now: datetime, last: datetime | None,
                  grace: timedelta) -> CatchUp:
    """The catch-up after downtime, given the last slot this schedule claimed (None: no history).

    The most recent slot <= now runs once when within `grace`; the slots between `last` and it
    are missed: reported (the newest MAX_MISSED_LISTED within MISSED_LOOKBACK), never run.
    Without history nothing counts as missed."""
    latest = calendar.latest_fire(now)
    if latest is None or (last is not None and latest <= last):
        return CatchUp(run=None)
    run = latest if now - latest <= grace else None
    if last is None:
        return CatchUp(run=run)
    missed: list[datetime] = []
    older = False
    for fire in chain(() if run else (latest,), calendar.fires_before(latest)):
        if fire <= last:
            break
        if fire <= latest - MISSED_LOOKBACK or len(missed) == MAX_MISSED_LISTED:
            older = True
            break
        missed.append(fire)
    return CatchUp(run=run, missed=tuple(reversed(missed)), older_missed=older)
