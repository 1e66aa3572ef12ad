"""Storage's exception tree. It imports no SQLAlchemy, so a surface that only catches these (the
command line's `NotFound`) does not load the database layer; storage/errors.py is the border that
maps the database's own errors onto it.

    DialecticError (engine.errors)
    └── StorageError                the database refused or could not find something
        ├── NotFound                no row with that id (or a foreign key points nowhere)
        ├── Conflict                a constraint refused the write; `constraint` names it
        │   └── AlreadyExists       a unique key is taken; `existing_id` names the holder
        │       └── KeyReused       an idempotency key came back with another request
        ├── IllegalTransition       the debate's state machine forbids current -> target
        └── DatabaseUnavailable     the database cannot be reached or written (down, read-only,
                                    disk full): the caller may retry later
"""

from __future__ import annotations

from engine.errors import DialecticError


class StorageError(DialecticError):
    """Base of every error storage raises on purpose."""


class NotFound(StorageError):
    """No row with that id; `kind` says what was looked for."""

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"{kind} {key!s} not found")
        self.kind = kind
        self.key = key


class Conflict(StorageError):
    """A constraint refused the write (a concurrent writer got there first, most often)."""

    def __init__(self, message: str, *, constraint: str | None = None) -> None:
        super().__init__(message)
        self.constraint = constraint


class AlreadyExists(Conflict):
    """A unique key is already taken; `existing_id` is the row holding it, when known."""

    def __init__(
        self, message: str, *, constraint: str | None = None, existing_id: str | None = None
    ) -> None:
        super().__init__(message, constraint=constraint)
        self.existing_id = existing_id


class KeyReused(AlreadyExists):
    """An idempotency key was sent again with a different request: not a retry of the first,
    so it is refused (`existing_id` is the debate the key belongs to)."""


class IllegalTransition(StorageError):
    """The lifecycle forbids moving a debate from `current` to `target`."""

    def __init__(self, debate_id: str, current: str, target: str) -> None:
        super().__init__(f"debate {debate_id}: illegal transition {current} -> {target}")
        self.debate_id = debate_id
        self.current = current
        self.target = target


class DatabaseUnavailable(StorageError):
    """The database cannot be reached or written right now; nothing was changed."""
