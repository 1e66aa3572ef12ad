"""What each transaction committed on a `Database` while a test ran: its statements in order, and
the rows its INSERTs carried, per table (read from each INSERT's compiled parameters: one dict per
row, multi-row INSERTs included)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import JSON, event
from sqlalchemy.types import TypeDecorator, TypeEngine

from storage.db import Database
from storage.schema import METADATA


@dataclass
class Committed:
    """One committed transaction."""

    statements: list[str] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))


@contextmanager
def committed(db: Database) -> Iterator[list[Committed]]:
    """Every transaction committed on `db` meanwhile (rolled-back ones left out)."""
    open_: dict[int, Committed] = {}
    done: list[Committed] = []
    # each INSERT's context, kept alive: a freed context's id() may be reused by the next one
    # (its rows were then skipped: a step's charge went missing here once, at load 4-5)
    seen: dict[int, Any] = {}
    engine = db.engine.sync_engine

    def begin(conn: Any) -> None:
        open_[id(conn)] = Committed()

    def execute(conn: Any, _cursor: Any, statement: str, _params: Any, context: Any,
                _many: bool) -> None:
        current = open_.get(id(conn))
        if current is None:
            return
        current.statements.append(" ".join(statement.split()))
        if context is not None and id(context) in seen:
            return
        found = inserted(statement, _params, context)
        if found is not None:
            seen[id(context)] = context   # a multi-row INSERT may run in batches: its rows once
            table, rows = found
            current.rows[table] += rows

    def commit(conn: Any) -> None:
        current = open_.pop(id(conn), None)
        if current is not None:
            done.append(current)

    def rollback(conn: Any) -> None:
        open_.pop(id(conn), None)

    hooks = [("begin", begin), ("before_cursor_execute", execute), ("commit", commit),
             ("rollback", rollback)]
    for name, fn in hooks:
        event.listen(engine, name, fn)
    try:
        yield done
    finally:
        for name, fn in hooks:
            event.remove(engine, name, fn)


def inserted(statement: str, params: Any, context: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """The table and rows an INSERT about to run carries, as it was given them (a multi-row
    INSERT's compiled parameters, or PostgreSQL's batch INSERT's column arrays); None for any
    other statement."""
    unnest = _UNNEST.match(" ".join(statement.split()))
    if unnest is not None:
        return _unnest_rows(unnest, params)
    if context is None or not context.isinsert:
        return None
    return context.compiled.statement.table.name, [dict(p) for p in context.compiled_parameters]


#: storage/arrays.py's `unnest_insert`: INSERT INTO table (columns) SELECT ... FROM unnest(...)
_UNNEST = re.compile(r'INSERT INTO "?(?P<table>\w+)"? \((?P<columns>[^)]*)\) '
                     r"SELECT .*? FROM unnest\(")


def _unnest_rows(found: re.Match[str], params: Any) -> tuple[str, list[dict[str, Any]]]:
    """The rows of a batch INSERT sent as one TEXT array per column (in the order of the
    columns: the driver's positional parameters), each value as the INSERT was given it."""
    table = METADATA.tables[found["table"]]
    names = [name.strip().strip('"') for name in found["columns"].split(",")]
    arrays = list(params.values()) if isinstance(params, dict) else list(params)
    return table.name, [{name: _value(table.c[name].type, text)
                         for name, text in zip(names, values, strict=True)}
                        for values in zip(*arrays, strict=True)]


def _value(kind: TypeEngine[Any], text: str | None) -> Any:
    impl = kind.impl if isinstance(kind, TypeDecorator) else kind
    if text is None:
        return None
    if isinstance(impl, JSON) or isinstance(kind, JSON):
        return json.loads(text)
    python: type[Any] = impl.python_type   # type: ignore[assignment]
    if python is bool:
        return text == "true"
    if python is datetime:
        return datetime.fromisoformat(text)
    if python is date:
        return date.fromisoformat(text)
    return python(text)
