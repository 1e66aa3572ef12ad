"""What each transaction committed on a `Database` while a test ran: its statements in order, and
the rows its INSERTs carried, per table (read from each INSERT's compiled parameters: one dict per
row, multi-row INSERTs included)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from storage.db import Database


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
        if context is None or not context.isinsert or id(context) in seen:
            return
        seen[id(context)] = context   # a multi-row INSERT may run in batches: its rows once
        table = context.compiled.statement.table.name
        current.rows[table] += [dict(p) for p in context.compiled_parameters]

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
