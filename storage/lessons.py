"""What providers' 400s taught, per (endpoint, model): the repository functions (a session,
never a commit) and `DbLessonBook`, the engine's `LessonBook` port on the database."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from storage.db import Database, upserting, write
from storage.errors import DATABASE_ERRORS
from storage.models import jsonable
from storage.service_rows import ProviderLessonRow

log = logging.getLogger(__name__)


async def lessons_for(session: AsyncSession, endpoint: str) -> dict[str, dict[str, Any]]:
    """model -> lesson, for `endpoint`."""
    rows = await session.execute(select(ProviderLessonRow.model, ProviderLessonRow.lesson)
                                 .where(ProviderLessonRow.endpoint == endpoint))
    return {model: dict(lesson) for model, lesson in rows.all() if isinstance(lesson, dict)}


async def keep_lesson(session: AsyncSession, *, endpoint: str, model: str,
                      lesson: dict[str, Any]) -> None:
    values = {"endpoint": endpoint, "model": model, "lesson": jsonable(lesson),
              "learned_at": utcnow()}
    await write(session, upserting(session, ProviderLessonRow, conflict=("endpoint", "model"),
                                   update=("lesson", "learned_at")), values)


async def forget_lessons(session: AsyncSession, endpoint: str) -> int:
    """Delete `endpoint`'s lessons; how many went."""
    result = await session.execute(
        delete(ProviderLessonRow).where(ProviderLessonRow.endpoint == endpoint)
        .returning(ProviderLessonRow.model).execution_options(synchronize_session=False))
    return len(result.all())


class DbLessonBook:
    """engine.ports.LessonBook on the provider_lessons table. A database that fails to read or
    keep a lesson costs the lesson, never the call that learned it (logged)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def load(self, endpoint: str) -> dict[str, dict[str, Any]]:
        try:
            async with self.db.transaction(readonly=True) as session:
                return await lessons_for(session, endpoint)
        except DATABASE_ERRORS as exc:
            log.warning("provider lessons not read (%s): learning them again", exc)
            return {}

    async def save(self, endpoint: str, model: str, lesson: dict[str, Any]) -> None:
        try:
            async with self.db.transaction() as session:
                await keep_lesson(session, endpoint=endpoint, model=model, lesson=lesson)
        except DATABASE_ERRORS as exc:
            log.warning("provider lesson for %s not kept (%s)", model, exc)

    async def forget(self, endpoint: str) -> int:
        async with self.db.transaction() as session:
            return await forget_lessons(session, endpoint)
