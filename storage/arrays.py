"""PostgreSQL statements whose text does not depend on how many rows or values they carry.

asyncpg prepares a statement once per connection per SQL text (storage/db.py: 30 connections a
process). A multi-row INSERT ... VALUES and an expanding IN list are another text for every size
of batch: over a 10 s run of the service bench each worker prepared ~600 statements, 57 shapes of
the audit INSERT alone, each prepare a round trip and a parse on the server. Here the rows travel
as one array per column (`INSERT ... SELECT ... FROM unnest(...)`), and a list as one array
(`= ANY(...)`): one text, prepared once per connection, whatever the size (docs/benchmarks.md,
"One statement text per batch on PostgreSQL"). SQLite keeps its statements: it prepares nothing
per connection that lasts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import ARRAY, ColumnElement, Dialect, String, Table, any_, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import TextualSelect

T = TypeVar("T")
#: (table, columns, conflict, update, returning) -> the unnest INSERT of those rows' columns
Shape = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def unnest_insert(dialect: Dialect, table: Table, columns: tuple[str, ...],
                  conflict: tuple[str, ...], update: tuple[str, ...],
                  returning: tuple[str, ...]) -> TextClause | TextualSelect:
    """INSERT INTO table (columns) SELECT FROM unnest(one array per column) ON CONFLICT ...: the
    multi-row INSERT of `storage.db.ignoring_insert`/`upserting` as one text for every batch
    size. A JSON column travels as text and is cast per element (asyncpg has no codec for an
    array of JSONB); every other column as an array of its own type, unsized, so that the
    column refuses what does not fit as the multi-row INSERT's does."""
    quote = dialect.identifier_preparer.quote
    casts, selected = [], []
    for i, name in enumerate(columns):
        # without its length: an explicit cast to VARCHAR(64) truncates a longer value, where
        # the INSERT's own assignment to the column refuses it
        sql_type = _MODIFIERS.sub("", dialect.type_compiler_instance.process(
            table.c[name].type.dialect_impl(dialect)))
        if sql_type in ("JSON", "JSONB"):
            casts.append(f"CAST(:c{i} AS TEXT[])")
            selected.append(f"CAST(u.c{i} AS {sql_type})")
        else:
            casts.append(f"CAST(:c{i} AS {sql_type}[])")
            selected.append(f"u.c{i}")
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)})"
           f" SELECT {', '.join(selected)} FROM unnest({', '.join(casts)})"
           f" AS u({', '.join(f'c{i}' for i in range(len(columns)))})"
           f" ON CONFLICT ({', '.join(quote(c) for c in conflict)})")
    sql += (" DO UPDATE SET " + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in update)
            if update else " DO NOTHING")
    if returning:
        sql += f" RETURNING {', '.join(quote(c) for c in returning)}"
        return text(sql).columns(*(table.c[name] for name in returning))
    return text(sql)


_MODIFIERS = re.compile(r"\([^)]*\)")


def column_arrays(dialect: Dialect, table: Table, columns: tuple[str, ...],
                  rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The rows as `unnest_insert`'s parameters: each column's values through the column type's
    own bind processing (aware UTC datetimes, JSON encoded as SQLAlchemy encodes it), so the
    stored rows are those the multi-row INSERT stores."""
    params: dict[str, list[Any]] = {}
    for i, name in enumerate(columns):
        process: Callable[[Any], Any] | None = table.c[name].type._cached_bind_processor(dialect)
        values = [row[name] for row in rows]
        params[f"c{i}"] = [process(v) for v in values] if process is not None else values
    return params


def among(column: ColumnElement[Any], name: str, dialect: str) -> ColumnElement[bool]:
    """`column IN (the list passed as `name`)`: on PostgreSQL `= ANY(array)`, one text for every
    length; elsewhere an expanding IN."""
    if dialect == "postgresql":
        # unsized: a cast to VARCHAR(n)[] would cut a longer value down to one that matches
        element = String() if isinstance(column.type, String) else column.type
        return column == any_(bindparam(name, type_=ARRAY(element)))
    return column.in_(bindparam(name, expanding=True))


class PerDialect(Generic[T]):
    """A statement built once per dialect by `build(dialect name)` (one with `among` in it):
    `statement(session)` gives the one for the session's database."""

    def __init__(self, build: Callable[[str], T]) -> None:
        self.build = build
        self.built: dict[str, T] = {}

    def __call__(self, session: AsyncSession) -> T:
        name = session.get_bind().dialect.name
        built = self.built.get(name)
        if built is None:
            built = self.built[name] = self.build(name)
        return built


__all__ = ["PerDialect", "Shape", "among", "column_arrays", "unnest_insert"]
