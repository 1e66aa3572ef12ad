"""The one border where the database's own errors get a meaning in storage's exception tree
(storage/exceptions.py, re-exported here; the tree is drawn there).

`unavailable()` maps connection and I/O failures (the server refused or went away, the SQLite file
cannot be written) to `DatabaseUnavailable`, naming where the database is without its password.
`translate()` maps SQLAlchemy's `IntegrityError` (asyncpg or sqlite3 underneath) to this tree by
constraint name, so callers never parse driver messages. `Database.transaction()` applies it to
whatever escapes a transaction; repositories that expect a violation catch it inside a savepoint.
"""

from __future__ import annotations

import re

from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint
from sqlalchemy.exc import (
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)

from storage.exceptions import (
    AlreadyExists,
    Conflict,
    DatabaseUnavailable,
    IllegalTransition,
    KeyReused,
    NotFound,
    StorageError,
)
from storage.models import Base

__all__ = ["DATABASE_ERRORS", "AlreadyExists", "Conflict", "DatabaseUnavailable",
           "IllegalTransition", "KeyReused", "NotFound", "StorageError", "translate",
           "unavailable", "violation"]


# SQLAlchemy's errors that mean "the database is not there or cannot write", not "this query is
# wrong": connection refused or dropped (OperationalError/InterfaceError, or the driver's OSError
# before SQLAlchemy wraps it), SQLite's read-only, locked or I/O errors (OperationalError).
_UNAVAILABLE = (OperationalError, InterfaceError, OSError, TimeoutError)


def unavailable(exc: BaseException, where: str) -> DatabaseUnavailable | None:
    """`DatabaseUnavailable` for a failure that says the database cannot be used, else None.
    `where` names the database for people (host and name, or the SQLite file; no password)."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return DatabaseUnavailable(f"lost the connection to the database {where}; try again")
    text = str(getattr(exc, "orig", None) or exc)
    if isinstance(exc, DBAPIError) and ("no such table" in text or "UndefinedTable" in text
                                        or ("relation" in text and "does not exist" in text)):
        return DatabaseUnavailable(f"the database {where} has no Dialectic tables yet: run "
                                   "`dialectic db upgrade` (serve and worker do it on start)")
    if not isinstance(exc, _UNAVAILABLE):
        return None
    orig = getattr(exc, "orig", None) or exc
    reason = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return DatabaseUnavailable(f"cannot use the database {where} ({reason[:200]}): check "
                               "DATABASE_URL and that the database is running and writable")


_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (?P<cols>[\w., ]+)")
_PG_UNIQUE = "23505"
_PG_FOREIGN_KEY = "23503"


def _unique_constraints() -> dict[tuple[str, tuple[str, ...]], str]:
    """(table, columns) -> constraint name, for every primary key and unique constraint."""
    found: dict[tuple[str, tuple[str, ...]], str] = {}
    for table in Base.metadata.tables.values():
        for constraint in table.constraints:
            if isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint) and isinstance(
                constraint.name, str
            ):
                found[(table.name, tuple(c.name for c in constraint.columns))] = constraint.name
    return found


def _sqlite_constraint(message: str) -> str | None:
    match = _SQLITE_UNIQUE.search(message)
    if match is None:
        return None
    qualified = [part.strip().split(".", 1) for part in match["cols"].split(",")]
    table = qualified[0][0]
    columns = tuple(part[-1] for part in qualified)
    # read the metadata now, not at import: tables defined beside repositories register late
    return _unique_constraints().get((table, columns))


def violation(exc: IntegrityError) -> tuple[str, str | None]:
    """What `exc` violated: ("unique" | "foreign_key" | "other", constraint name or None)."""
    orig = exc.orig
    # asyncpg's own exception: `.orig` on SQLAlchemy 2.1's adapted error, `__cause__` on 2.0
    cause = getattr(orig, "orig", None) or getattr(orig, "__cause__", None)
    sqlstate = getattr(orig, "pgcode", None) or getattr(cause, "sqlstate", None)
    if sqlstate is not None:  # PostgreSQL: the server names the constraint
        name = getattr(cause, "constraint_name", None)
        kind = {_PG_UNIQUE: "unique", _PG_FOREIGN_KEY: "foreign_key"}.get(str(sqlstate), "other")
        return kind, name
    message = str(orig)
    if "UNIQUE constraint failed" in message:
        return "unique", _sqlite_constraint(message)
    if "FOREIGN KEY constraint failed" in message:
        return "foreign_key", None
    return "other", None


def translate(exc: IntegrityError) -> StorageError:
    """The domain error for a database integrity error; raise it `from exc`."""
    kind, name = violation(exc)
    if kind == "unique":
        return AlreadyExists(f"already exists ({name or 'unique key'})", constraint=name)
    if kind == "foreign_key":
        return NotFound("referenced row", name or "(foreign key)")
    return Conflict(f"constraint violated: {exc.orig}", constraint=name)


# What a caller outside storage catches when the database itself fails (down, locked, timed
# out): bot/ handles these without importing SQLAlchemy.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (StorageError, SQLAlchemyError, OSError)
