"""A workspace's own schedules: the rules every surface applies (App Home, the console, the API).

A workspace's admins and owners (or the operator) add, edit, pause and remove the digests their
workspace runs: topics debated with a preset on a cron slot in a time zone, posted in one of its
channels. They are stored in `workspace_schedules` (storage/workspace_schedules.py, audited with
before and after), separate from the operator's `[[schedules]]`, and fired by the same scheduler
as those (bot/scheduling/scheduler.py), each slot once across every process.

What a form must hold, checked field by field (`FieldError` names the field; nothing is saved):
a name (lowercase, unique in the workspace), a known preset, one to MAX_TOPICS topics with
visible text, a 5-field cron that fires at most hourly (one minute value), an IANA time zone and
a channel id. A workspace has at most MAX_PER_WORKSPACE schedules. Whether Slack shows the bot
the channel is the Slack surface's check (the HTTP surface does not call Slack).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.scheduling.calendar import parse_cron
from bot.scheduling.config import ID_PATTERN, ScheduleConfig, parse_channel, zone
from bot.service.workspace_settings import FieldError, NotAdmin
from engine.characters import require_visible
from engine.errors import InvalidRequest
from storage import audit
from storage import workspace_schedules as store
from storage.db import Database
from storage.errors import AlreadyExists, NotFound
from storage.workspace_schedules import WorkspaceSchedule

__all__ = ["CONFIG_PREFIX", "FIELDS", "MAX_PER_WORKSPACE", "MAX_TOPICS", "Listed", "add",
           "config_of", "edit", "listed", "parse_form", "refused", "remove", "set_enabled"]

MAX_PER_WORKSPACE = 10
MAX_TOPICS = 10
MAX_TOPIC_CHARS = 500
#: a workspace schedule's id among the scheduler's (operator ids cannot start so: `ws-` + hex)
CONFIG_PREFIX = "ws-"
REFUSED = "workspace_schedule_refused"
NAME, PRESET, TOPICS, CRON, TIMEZONE, CHANNEL = ("name", "preset", "topics", "cron", "timezone",
                                                 "channel")
FIELDS = (NAME, PRESET, TOPICS, CRON, TIMEZONE, CHANNEL)
NOT_ADMIN = "only the workspace's admins and owners can change its schedules"
_NAME = re.compile(ID_PATTERN)
_ONE_MINUTE = re.compile(r"[0-5]?[0-9]")


@dataclass(frozen=True, slots=True)
class Listed:
    """A schedule as the surfaces list it: its next run (None while paused)."""

    schedule: WorkspaceSchedule
    next_run: datetime | None


def config_of(schedule: WorkspaceSchedule) -> ScheduleConfig:
    """The scheduler's value for it: a digest of its topics for its workspace."""
    return ScheduleConfig(id=CONFIG_PREFIX + schedule.id, cron=schedule.cron,
                          timezone=schedule.timezone, preset=schedule.preset,
                          channel=schedule.channel, team=schedule.team_id,
                          topics=schedule.topics, enabled=schedule.enabled)


def parse_form(form: Mapping[str, str], *, presets: Collection[str]) -> dict[str, Any]:
    """The fields a form gives, checked (absent fields are left alone); FieldError with one line
    naming the first field refused."""
    found: dict[str, Any] = {}
    if NAME in form:
        name = form[NAME].strip()
        if not _NAME.fullmatch(name):
            raise FieldError(NAME, "name: lowercase letters, digits, - and _ (up to 64), "
                             "e.g. morning-markets")
        found[NAME] = name
    if PRESET in form:
        preset = form[PRESET].strip()
        if preset not in presets:
            raise FieldError(PRESET, f"preset: no preset {preset[:40]!r} (presets: "
                             f"{', '.join(sorted(presets)) or 'none'})")
        found[PRESET] = preset
    if TOPICS in form:
        found[TOPICS] = _topics(form[TOPICS])
    if TIMEZONE in form:
        try:
            found[TIMEZONE] = zone(form[TIMEZONE].strip() or "UTC").key
        except ValueError as exc:
            raise FieldError(TIMEZONE, f"time zone: {exc}") from None
    if CRON in form:
        found[CRON] = _cron(form[CRON], found.get(TIMEZONE, "UTC"))
    if CHANNEL in form:
        found[CHANNEL] = _channel(form[CHANNEL])
    return found


def _topics(text: str) -> tuple[str, ...]:
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        topics = tuple(require_visible(line, "topics: a topic with no visible text")
                       for line in lines)
    except InvalidRequest as exc:
        raise FieldError(TOPICS, str(exc) if str(exc).startswith("topics") else
                         f"topics: {exc}") from None
    if not topics:
        raise FieldError(TOPICS, "topics: give at least one topic, one a line")
    if len(topics) > MAX_TOPICS:
        raise FieldError(TOPICS, f"topics: at most {MAX_TOPICS}, one a line")
    if any(len(t) > MAX_TOPIC_CHARS for t in topics):
        raise FieldError(TOPICS, f"topics: each at most {MAX_TOPIC_CHARS} characters")
    return topics


def _cron(text: str, timezone: str) -> str:
    expr = " ".join(text.split())
    try:
        expr = parse_cron(expr, zone(timezone)).expr
    except ValueError as exc:
        raise FieldError(CRON, f"cron: {exc}") from None
    if not _ONE_MINUTE.fullmatch(expr.split()[0]):
        raise FieldError(CRON, "cron: at most once an hour: give one minute, e.g. "
                         "`0 8 * * 1-5` (not a list, range, step or *)")
    return expr


def _channel(text: str) -> str:
    try:
        found = parse_channel(text)
    except ValueError as exc:
        raise FieldError(CHANNEL, f"channel: {exc}") from None
    if found == text.strip().removeprefix("#") and not found[:1].isupper():
        raise FieldError(CHANNEL, f"channel: give its id (C0123ABC) or a <#C…> mention, not "
                         f"the name {text.strip()[:40]!r}")
    return found


async def listed(db: Database, team_id: str, now: datetime) -> list[Listed]:
    """The workspace's schedules by name, with when each runs next."""
    async with db.transaction(readonly=True) as session:
        found = await store.list_for(session, team_id)
    return [Listed(s, config_of(s).calendar.next_fire(now) if s.enabled else None)
            for s in found]


async def add(db: Database, team_id: str, fields: dict[str, Any], *, by: str, admin: bool,
              now: datetime) -> WorkspaceSchedule:
    """A new schedule from `parse_form`'s fields (every one given), for an admin (or the
    operator); NotAdmin otherwise (audited, nothing saved)."""
    await _allowed(db, team_id, by=by, admin=admin, now=now)
    missing = [f for f in FIELDS if f not in fields]
    if missing:
        raise FieldError(missing[0], f"{missing[0]}: required")
    schedule = WorkspaceSchedule(id="", team_id=team_id, **fields)
    try:
        async with db.transaction() as session:
            if await store.count(session, team_id) >= MAX_PER_WORKSPACE:
                raise InvalidRequest(f"a workspace has at most {MAX_PER_WORKSPACE} schedules: "
                                     "remove one first")
            await _name_free(session, team_id, fields[NAME], None)
            return await store.add(session, schedule, by=by, now=now)
    except AlreadyExists:   # a concurrent add took the name between the check and the insert
        raise _taken(fields[NAME]) from None


async def edit(db: Database, team_id: str, schedule_id: str, fields: dict[str, Any], *,
               by: str, admin: bool, now: datetime) -> WorkspaceSchedule:
    """Change the given fields of the workspace's schedule; audited with before and after."""
    await _allowed(db, team_id, by=by, admin=admin, now=now)
    if CRON in fields or TIMEZONE in fields:   # the cron is checked in its (new) time zone
        async with db.transaction(readonly=True) as session:
            current = await _owned(session, team_id, schedule_id)
        fields = {**fields, CRON: _cron(fields.get(CRON, current.cron),
                                        fields.get(TIMEZONE, current.timezone))}
    try:
        async with db.transaction() as session:
            await _owned(session, team_id, schedule_id)
            if NAME in fields:
                await _name_free(session, team_id, fields[NAME], schedule_id)
            return (await store.update(session, schedule_id, fields, by=by, now=now))[1]
    except AlreadyExists:
        raise _taken(fields[NAME]) from None


async def set_enabled(db: Database, team_id: str, schedule_id: str, enabled: bool, *, by: str,
                      admin: bool, now: datetime) -> WorkspaceSchedule:
    """Pause (False) or resume (True) it on every process from its next slot; audited."""
    await _allowed(db, team_id, by=by, admin=admin, now=now)
    async with db.transaction() as session:
        await _owned(session, team_id, schedule_id)
        return (await store.update(session, schedule_id, {"enabled": enabled}, by=by,
                                   now=now))[1]


async def remove(db: Database, team_id: str, schedule_id: str, *, by: str, admin: bool,
                 now: datetime) -> WorkspaceSchedule:
    """Delete it; its runs stay recorded. Audited with what it was."""
    await _allowed(db, team_id, by=by, admin=admin, now=now)
    async with db.transaction() as session:
        await _owned(session, team_id, schedule_id)
        return await store.remove(session, schedule_id, by=by, now=now)


async def refused(db: Database, team_id: str, *, by: str, now: datetime, what: str) -> None:
    """Audit that `by`, no admin of the workspace, tried to change its schedules."""
    async with db.transaction() as session:
        await audit.append(session, debate_id=None, kind=REFUSED, actor=by, at=now,
                           data={"team_id": team_id, "tried": what,
                                 "reason": "not an admin or owner"})


async def _allowed(db: Database, team_id: str, *, by: str, admin: bool, now: datetime) -> None:
    if not team_id:
        raise InvalidRequest("no workspace named")
    if not admin:
        await refused(db, team_id, by=by, now=now, what="change")
        raise NotAdmin(NOT_ADMIN)


async def _owned(session: Any, team_id: str, schedule_id: str) -> WorkspaceSchedule:
    """The schedule if it is this workspace's; NotFound otherwise (another workspace's is as
    unknown as one that never was)."""
    found = await store.get(session, schedule_id)
    if found is None or found.team_id != team_id:
        raise NotFound("schedule", schedule_id)
    return found


async def _name_free(session: Any, team_id: str, name: str, schedule_id: str | None) -> None:
    for other in await store.list_for(session, team_id):
        if other.name == name and other.id != schedule_id:
            raise _taken(name)


def _taken(name: str) -> FieldError:
    return FieldError(NAME, f"name: this workspace has a schedule named {name!r} already")
