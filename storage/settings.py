"""Storage's settings: where the database is.

Unset, it is the SQLite file `dialectic.db` in the data directory: `DIALECTIC_DATA_DIR`, else
`$XDG_DATA_HOME/dialectic`, else `~/.local/share/dialectic` (one place whatever the current
directory, so every command finds the same debates; a blank `DIALECTIC_DATA_DIR` is unset).
`DATABASE_URL` takes the async SQLAlchemy form (`sqlite+aiosqlite:////srv/dialectic.db`,
`postgresql+asyncpg://user@host/db`). The synchronous forms people copy from elsewhere
(`sqlite:///x.db`, `postgres://`, `postgresql://`, `postgresql+psycopg2://`) are mapped to the
async driver of the same database; anything else is refused with the forms that work.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.provider.redaction import url_secrets

DATABASE_FILE = "dialectic.db"
_ASYNC_DRIVER = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg",
                 "postgres": "postgresql+asyncpg"}
_SYNC_DRIVERS = {"pysqlite", "psycopg2", "psycopg", "pg8000", "psycopg2cffi"}
_FORMS = "sqlite+aiosqlite:///path/to.db or postgresql+asyncpg://user:password@host/db"


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/dialectic` (an absolute XDG_DATA_HOME only, as the spec says), else
    `~/.local/share/dialectic`."""
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "dialectic"


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path.expanduser().absolute()}"


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

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              allow_inf_nan=False)

    data_dir: Path = Field(default_factory=default_data_dir)
    database_url: str = Field(
        default="", validation_alias=AliasChoices("DATABASE_URL", "database_url"))

    @field_validator("data_dir", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """`DIALECTIC_DATA_DIR=` (set but blank, as an unset shell variable expands) is the
        default, never the current directory, which is what `Path("")` would mean."""
        return default_data_dir() if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url")
    @classmethod
    def _async_form(cls, value: str) -> str:
        return async_database_url(value) if value.strip() else ""

    @model_validator(mode="after")
    def _default_database(self) -> StorageSettings:
        if not self.database_url:   # frozen: set once, here, before anyone reads it
            object.__setattr__(self, "database_url", sqlite_url(self.data_dir / DATABASE_FILE))
        return self

    @property
    def is_default_database(self) -> bool:
        """True when DATABASE_URL is unset: the SQLite file in the data directory."""
        return self.database_url == sqlite_url(self.data_dir / DATABASE_FILE)

    def sqlite_file(self) -> Path | None:
        """The SQLite file the URL names (None for PostgreSQL and in-memory databases)."""
        scheme, _, rest = self.database_url.partition(":///")
        path = rest.split("?", 1)[0]
        if not scheme.startswith("sqlite") or path in ("", ":memory:") or path.startswith("file:"):
            return None
        return Path(path).expanduser()

    def secrets(self) -> tuple[str, ...]:
        """The password inside DATABASE_URL, for log redaction."""
        return url_secrets(self.database_url)
