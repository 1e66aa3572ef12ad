"""The models that answer for the names debates ask (engine/money/answering.py), learned from every
reply and kept in the database: the process that sees an endpoint answer `prod-reasoner` with
`o1-2024-12-17` prices o1 from its next prediction on, and every other process (serve, workers,
`dialectic run`, `estimate`) from its next read, a few seconds later at most."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from engine.provider.llm import CallSpec, LLMClient, Reply, T
from engine.settings import EngineSettings
from storage import answers
from storage.db import Database
from storage.errors import DATABASE_ERRORS

log = logging.getLogger("dialectic.service")

#: How often a process reads what the others learned (one small query).
REFRESH_SECONDS = 5.0


class AnswerBook:
    """The settings' book of answering models, kept in step with the database."""

    def __init__(self, engine: EngineSettings, db: Database, *,
                 clock: Callable[[], datetime]) -> None:
        self.engine = engine
        self.db = db
        self.clock = clock
        self._read_at: datetime | None = None
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        """What every process has learned, read at most every REFRESH_SECONDS."""
        if self.engine.is_rehearsal:
            return
        async with self._lock:
            now = self.clock()
            if self._read_at is not None and (
                    now - self._read_at).total_seconds() < REFRESH_SECONDS:
                return
            endpoints = {self.engine.for_provider(p).endpoint_key
                         for p in (None, *self.engine.providers)}
            async with self.db.transaction(readonly=True) as session:
                found = {e: await answers.known(session, e) for e in sorted(endpoints)}
            for endpoint, known in found.items():
                self.engine.answers.merge(endpoint, known)
            self._read_at = now

    async def saw(self, asked: str, answered: str) -> None:
        """A reply for `asked` named `answered`: news is priced at once here and stored for the
        other processes. A database that cannot take it now is told at the next news."""
        provider, asked = self.engine.route(asked)   # kept by the provider's endpoint, bare
        answered = self.engine.route(answered)[1]
        endpoint = self.engine.for_provider(provider).endpoint_key
        if not self.engine.answers.learn(endpoint, asked, answered):
            return
        if answered != asked:
            log.info("%s answers for %r at %s: priced as %s from now on", answered, asked,
                     endpoint, answered)
        try:
            async with self.db.transaction() as session:
                await answers.learn(session, endpoint=endpoint, asked=asked,
                                    answered=answered, now=self.clock())
        except DATABASE_ERRORS as exc:
            log.warning("could not store that %s answers for %r (%s); this process prices it "
                        "so all the same", answered, asked, exc)


class LearningClient:
    """An `LLMClient` that tells the book which model answered each call (billed replies only,
    also those of a call that then failed)."""

    def __init__(self, inner: LLMClient, book: AnswerBook) -> None:
        self.inner = inner
        self.book = book

    @property
    def rehearsal(self) -> bool:
        return self.inner.rehearsal

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        try:
            reply = await self.inner.complete(spec)
        except Exception:  # re-raised: a call that failed after a billed reply still told us
            await self._saw(spec.model, spec.meter.model if spec.meter is not None else "")
            raise
        await self._saw(spec.model, reply.model)
        return reply

    async def _saw(self, asked: str, answered: str) -> None:
        if answered and not self.inner.rehearsal:
            await self.book.saw(asked, answered)

    async def aclose(self) -> None:
        await self.inner.aclose()


__all__ = ["AnswerBook", "LearningClient"]
