"""Storage's settings: where the database is.

`DATABASE_URL` takes the async SQLAlchemy form (`sqlite+aiosqlite:///./dialectic.db`,
`postgresql+asyncpg://user@host/db`). The synchronous forms people copy from elsewhere
(`sqlite:///x.db`, `postgres://`, `postgresql://`, `postgresql+psycopg2://`) are mapped to the
async driver of the same database; anything else is refused with the forms that work.
"""

from __future__ import annotations

import difflib

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from engine.redaction import url_secrets

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./dialectic.db"
_ASYNC_DRIVER = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg",
                 "postgres": "postgresql+asyncpg"}
_SYNC_DRIVERS = {"pysqlite", "psycopg2", "psycopg", "pg8000", "psycopg2cffi"}
_FORMS = "sqlite+aiosqlite:///path/to.db or postgresql+asyncpg://user:password@host/db"


def async_database_url(url: str) -> str:
    """`url` in the async form the service uses; ValueError saying what to write otherwise."""
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a database URL; use {_FORMS}")
    backend, _, driver = scheme.partition("+")
    backend = backend.lower()
    if backend not in _ASYNC_DRIVER:
        close = difflib.get_close_matches(backend, ["sqlite", "postgresql"], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown database {backend!r}{hint}; use {_FORMS}")
    if driver and driver not in _SYNC_DRIVERS and f"{backend}+{driver}" != _ASYNC_DRIVER[backend]:
        raise ValueError(f"unknown driver {driver!r} for {backend}; use {_FORMS}")
    return f"{_ASYNC_DRIVER[backend]}://{rest}"


class StorageSettings(BaseModel):
    """Where debates, steps, the audit chain and the budget are kept."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        validation_alias=AliasChoices("DATABASE_URL", "database_url"))

    @field_validator("database_url")
    @classmethod
    def _async_form(cls, value: str) -> str:
        return async_database_url(value)

    def secrets(self) -> tuple[str, ...]:
        """The password inside DATABASE_URL, for log redaction."""
        return url_secrets(self.database_url)
