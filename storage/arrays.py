"""PostgreSQL statements whose text does not depend on how many rows or values they carry.

asyncpg prepares a statement once per connection per SQL text (storage/db.py keeps up to 30
connections a process, each caching 500). A multi-row INSERT ... VALUES and an expanding IN list
are another text for every size of batch: 57 texts of the audit INSERT alone in one run of the
service bench, and up to 500 sizes of each batch statement to churn through every connection's
cache in a long run. Here the rows travel as one TEXT array per column (`INSERT ... SELECT ...
FROM unnest(...)`), and a list as one array (`= ANY(...)`): one text whatever the size
(docs/benchmarks.md, "One statement text per batch on PostgreSQL"). SQLite keeps its
statements: it prepares nothing per connection that lasts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import ARRAY, ColumnElement, Dialect, String, Table, Text, any_, bindparam, text
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
    size. Every array is TEXT[], each element cast to its column's type on the server: asyncpg
    knows TEXT[] by itself, where an array of any other type costs a query of the catalogue on
    every new connection (~5 ms of planning on the server each). The casts are unsized, so the
    column refuses what does not fit as the multi-row INSERT's does (a cast to VARCHAR(64)
    would cut a longer value to fit)."""
    quote = dialect.identifier_preparer.quote
    selected = []
    for i, name in enumerate(columns):
        sql_type = _MODIFIERS.sub("", dialect.type_compiler_instance.process(
            table.c[name].type.dialect_impl(dialect)))
        selected.append(f"CAST(u.c{i} AS {sql_type})")
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)})"
           f" SELECT {', '.join(selected)} FROM unnest("
           f"{', '.join(f'CAST(:c{i} AS TEXT[])' for i in range(len(columns)))})"
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
                  rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str | None]]:
    """The rows as `unnest_insert`'s parameters: each column's values through the column type's
    own bind processing (aware UTC datetimes, JSON encoded as SQLAlchemy encodes it), then as
    the text PostgreSQL reads back exactly (the shortest repr of a float, ISO datetimes with
    their offset), so the stored rows are those the multi-row INSERT stores."""
    params: dict[str, list[str | None]] = {}
    for i, name in enumerate(columns):
        process: Callable[[Any], Any] | None = table.c[name].type._cached_bind_processor(dialect)
        values = [row[name] for row in rows]
        if process is not None:
            values = [process(v) for v in values]
        params[f"c{i}"] = [v if v is None or type(v) is str else _as_text(v) for v in values]
    return params


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)   # an IntEnum's number, as the driver sends it
    if isinstance(value, float):
        return float.__repr__(value)   # the shortest repr: PostgreSQL reads the same double
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):   # a str subclass (a StrEnum): its text, as the driver sends it
        return str.__str__(value)
    raise TypeError(f"no text form for a {type(value).__name__} in a batch's column arrays")


def among(column: ColumnElement[Any], name: str, dialect: str) -> ColumnElement[bool]:
    """`column IN (the list passed as `name`)`: on PostgreSQL `= ANY(array)`, one text for every
    length; elsewhere an expanding IN."""
    if dialect == "postgresql":
        # TEXT[]: asyncpg's own codec (an array of another type costs a query of the catalogue
        # per connection), and unsized: VARCHAR(n)[] would cut a longer value to one that matches
        element = Text() if isinstance(column.type, String) else column.type
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
