"""Group commit for running debates: a step's checkpoint, its spend and its audit links, and those
of every other debate writing at the same moment, go into one transaction.

Each write is submitted with the batch function that knows its table (storage/steps.py `put_steps`,
storage/budget.py `charge_many`, storage/audit.py `append_events`); a flusher takes what is
pending, calls each function once with all of its kind, in the order the kinds first appear (one
marked `runs_last` after the others), and commits. Every caller returns only when its own write is
committed (or failed), so a write is exactly as durable as in a transaction of its own; under load
it costs a fraction of the transactions, statements and fsyncs. Writes submitted together
(`write_together`: a step's checkpoint, its charge and its audit link, bot/service/step_writes.py)
always share one transaction, never split between batches. A batch that fails is retried submission
by submission, so one bad write does not sink the others; a batch function that finds a cached view
stale (an audit chain another process appended to) asks, with `Stale`, for the whole batch again
without its caches.

Reads that many debates make at the same moment (their evidence, the judge cache) are batched the
same way by a read-only journal (`lookups_for(db)`): one query for all of them instead of one
each, in one read-only transaction on SQLite, in autocommit on PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.errors import DATABASE_ERRORS

MAX_BATCH = 500

#: What a batch function gets after its results: run once the transaction has committed.
AfterCommit = Callable[[], None]
#: (session, the payloads of its kind, fresh: trust no cache) -> (one result per payload, hook)
BatchWriter = Callable[[AsyncSession, list[Any], bool],
                       Awaitable[tuple[list[Any], AfterCommit | None]]]


_LAST: set[BatchWriter] = set()


def runs_last(writer: BatchWriter) -> BatchWriter:
    """Mark a batch function that takes a lock every worker contends for (the day's budget
    row: storage/budget.py): it runs after the batch's other functions, just before the commit,
    so the lock is held for its statements and the commit only."""
    _LAST.add(writer)
    return writer


class Stale(Exception):
    """A batch function's cached view was out of date (nothing is wrong with the data): roll back
    and write the batch again with `fresh=True`."""


@dataclass(slots=True)
class _Write:
    writer: BatchWriter
    payload: Any
    done: asyncio.Future[Any] = field(repr=False)


class Journal:
    """The group commit of one database in this process (`journal_for(db)`), or its batched
    reads (`lookups_for(db)`: read-only transactions)."""

    def __init__(self, db: Database, *, readonly: bool = False, urgent: bool = False,
                 alone: bool = False) -> None:
        self.db = db
        self.readonly = readonly
        self.urgent = urgent
        self.alone = alone   # its batch functions write with one statement (Database.transaction)
        self.pending: list[list[_Write]] = []   # submissions: each commits whole, or not
        self.flusher: asyncio.Task[None] | None = None
        self.transactions = 0        # committed batches (for tests and benchmarks)

    async def write(self, writer: BatchWriter, payload: Any) -> Any:
        """Write `payload` with the others pending; its result once committed."""
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._submit([_Write(writer, payload, done)])
        return await asyncio.shield(done)  # a cancelled caller's write is still made

    async def write_together(self, writes: list[tuple[BatchWriter, Any]]) -> list[Any]:
        """Several writes as one submission: committed in one transaction (with others pending,
        maybe), or none of them; their results, in order, once committed."""
        loop = asyncio.get_running_loop()
        submission = [_Write(writer, payload, loop.create_future()) for writer, payload in writes]
        self._submit(submission)
        # shielded: a cancelled caller's writes are still made
        results = await asyncio.shield(asyncio.gather(*(item.done for item in submission),
                                                      return_exceptions=True))
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    def _submit(self, submission: list[_Write]) -> None:
        self.pending.append(submission)
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self._flush(), name="journal-group-commit")

    #: a lookup (on `lookups_for(db)`): the same batching, for a batch function that only reads
    read = write

    async def _flush(self) -> None:
        while self.pending:
            submissions = _take(self.pending)
            batch = [item for submission in submissions for item in submission]
            try:
                results = await self._commit(batch)
            except DATABASE_ERRORS:
                await self._one_by_one(submissions)  # one bad write must not sink the others
                continue
            except BaseException as exc:  # a bug, or cancellation: every waiter hears of it
                _fail(batch, exc)
                raise
            for item, result in zip(batch, results, strict=True):
                if not item.done.done():
                    item.done.set_result(result)

    async def _commit(self, batch: list[_Write]) -> list[Any]:
        """One transaction for the batch (again, without caches, if a writer found one stale)."""
        for fresh in (False, True):
            try:
                return await self._transaction(batch, fresh)
            except Stale:
                if fresh:
                    raise
        raise AssertionError("unreachable")

    async def _transaction(self, batch: list[_Write], fresh: bool) -> list[Any]:
        kinds: dict[BatchWriter, list[int]] = {}
        for index, item in enumerate(batch):
            kinds.setdefault(item.writer, []).append(index)
        results: list[Any] = [None] * len(batch)
        hooks: list[AfterCommit] = []
        async with self.db.transaction(readonly=self.readonly, urgent=self.urgent,
                                       alone=self.alone) as session:
            for writer, indexes in sorted(kinds.items(), key=lambda kind: kind[0] in _LAST):
                values, hook = await writer(session, [batch[i].payload for i in indexes], fresh)
                for i, value in zip(indexes, values, strict=True):
                    results[i] = value
                if hook is not None:
                    hooks.append(hook)
        self.transactions += 1
        for hook in hooks:
            hook()
        return results

    async def _one_by_one(self, submissions: list[list[_Write]]) -> None:
        for submission in submissions:
            try:
                results = await self._commit(submission)
            except DATABASE_ERRORS as exc:
                _fail(submission, exc)
            else:
                for item, result in zip(submission, results, strict=True):
                    if not item.done.done():
                        item.done.set_result(result)


def _take(pending: list[list[_Write]]) -> list[list[_Write]]:
    """The next batch: whole submissions, in order, until MAX_BATCH writes (at least one);
    what is left stays pending."""
    count = taken = 0
    while taken < len(pending) and (taken == 0 or count + len(pending[taken]) <= MAX_BATCH):
        count += len(pending[taken])
        taken += 1
    batch = pending[:taken]
    del pending[:taken]
    return batch


def _fail(batch: list[_Write], exc: BaseException) -> None:
    for item in batch:
        if not item.done.done():
            item.done.set_exception(exc if isinstance(exc, Exception)
                                    else RuntimeError(f"group commit stopped: {exc!r}"))


_JOURNALS: WeakKeyDictionary[Database, Journal] = WeakKeyDictionary()


def journal_for(db: Database) -> Journal:
    journal = _JOURNALS.get(db)
    if journal is None:
        journal = _JOURNALS[db] = Journal(db)
    return journal


_LOOKUPS: WeakKeyDictionary[Database, Journal] = WeakKeyDictionary()


def lookups_for(db: Database) -> Journal:
    """The batched reads of `db` in this process (batch functions that only read). None of them
    needs another's snapshot (a debate's steps, its evidence, the judge cache, holds): on
    PostgreSQL each statement runs on its own, in autocommit, one round trip where a read-only
    transaction takes three (BEGIN READ ONLY and its end)."""
    lookups = _LOOKUPS.get(db)
    if lookups is None:
        lookups = _LOOKUPS[db] = Journal(db, readonly=True, alone=True)
    return lookups


_GLANCES: WeakKeyDictionary[Database, Journal] = WeakKeyDictionary()


def glances_for(db: Database) -> Journal:
    """Batched reads someone is waiting on that need no common snapshot (today's budget in the
    estimate a `/debate` acks with): on PostgreSQL each statement on its own, in autocommit,
    one round trip where a read-only transaction takes three."""
    glances = _GLANCES.get(db)
    if glances is None:
        glances = _GLANCES[db] = Journal(db, readonly=True, alone=True)
    return glances


_URGENT: WeakKeyDictionary[Database, Journal] = WeakKeyDictionary()


def urgent_journal_for(db: Database) -> Journal:
    """The group commit of writes someone is waiting on (a Slack start before its ack): on
    SQLite its transactions take the write lock before the writers already waiting; on
    PostgreSQL each batch is one statement committed by itself (its rows stand alone: a start
    each), one round trip where a transaction takes three."""
    journal = _URGENT.get(db)
    if journal is None:
        journal = _URGENT[db] = Journal(db, urgent=True, alone=True)
    return journal

