"""A `[[schedules]]` entry of dialectic.toml as a typed, validated value, and the channel forms
Slack accepts."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from bot.scheduling.calendar import CronCalendar, parse_cron
from engine.vocabulary import Mode

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_CHANNEL_MENTION = re.compile(r"^<#(?P<id>[CG][A-Z0-9]+)(?:\|[^>]*)?>$")
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")
_CHANNEL_NAME = re.compile(r"^#?(?P<name>[a-z0-9][a-z0-9._-]{0,79})$")


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name like Europe/Paris)"
                         ) from None


def _known_zone(name: str) -> str:
    zone(name)
    return name


#: An IANA time zone name, checked when the settings load.
TimeZoneName = Annotated[str, AfterValidator(_known_zone)]


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
    timezone: TimeZoneName = "UTC"
    preset: str = "market"
    mode: Mode | None = None
    channel: str
    # the Slack workspace the schedule is run for (its channel is that workspace's): its
    # debates are that workspace's, under its daily budget as well as the operator's
    team: str | None = Field(default=None, pattern=r"^T[A-Z0-9]{2,30}$")
    topics: tuple[str, ...] = ()
    source: str | None = None          # a file path or an http(s) URL, read at firing time
    enabled: bool = True
    misfire_grace_seconds: int = Field(default=3600, ge=0, le=7 * 86400)
    max_signals: int = Field(default=20, ge=1, le=100)

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        return parse_cron(value, ZoneInfo("UTC")).expr  # ValueError with the reason

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
        return zone(self.timezone)

    @property
    def calendar(self) -> CronCalendar:
        """When the schedule fires: its cron in its time zone."""
        return CronCalendar(self.cron, self.tz)

    @property
    def grace(self) -> timedelta:
        return timedelta(seconds=self.misfire_grace_seconds)
