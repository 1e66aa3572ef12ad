"""The scheduling settings: the `[[schedules]]` digests, validated as typed models when the
settings load, and the time zone a schedule uses when it names none."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from bot.scheduling.config import ScheduleConfig, TimeZoneName
from engine.provider.redaction import url_secrets


class SchedulingSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    timezone: TimeZoneName = "UTC"
    schedules: tuple[ScheduleConfig, ...] = ()
    # fetch URL sources from loopback, link-local and private addresses too (an intranet feed)
    allow_private_sources: bool = False

    @model_validator(mode="before")
    @classmethod
    def _default_zone(cls, data: Any) -> Any:
        """A schedule without `timezone` takes the settings' own."""
        if isinstance(data, dict) and isinstance(data.get("schedules"), list | tuple):
            default = data.get("timezone", "UTC")
            data = {**data, "schedules": [
                {"timezone": default, **entry} if isinstance(entry, dict) else entry
                for entry in data["schedules"]]}
        return data

    def secrets(self) -> tuple[str, ...]:
        """Credentials inside the schedules' source URLs, for log redaction."""
        return tuple(s for c in self.schedules for s in url_secrets(c.source))

    @field_validator("schedules")
    @classmethod
    def _unique_ids(cls, value: tuple[ScheduleConfig, ...]) -> tuple[ScheduleConfig, ...]:
        seen: set[str] = set()
        for config in value:
            if config.id in seen:
                raise ValueError(f"the schedule id {config.id!r} is used twice")
            seen.add(config.id)
        return value
