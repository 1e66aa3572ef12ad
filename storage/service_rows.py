"""The service's own bookkeeping (storage/heartbeats.py, sessions.py and lessons.py are their
repositories): each process's last proof that it can write, console sign-out generations, and
what providers' 400s taught. Beside storage/models.py (same Base and column types): only a
process that uses them maps them, never `dialectic run`; storage/schema.py lists every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models import Base, UTCDateTime, json_type


class HeartbeatRow(Base):
    """The last time a process proved it can write (its health probe commits one)."""

    __tablename__ = "heartbeats"

    owner: Mapped[str] = mapped_column(String(255), primary_key=True)
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class SessionGenerationRow(Base):
    """How many times a person signed out: a console session carries the generation it began
    in, and is honoured only while that is still the person's (bot/service/sessions.py)."""

    __tablename__ = "session_generations"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)   # "": the operator
    generation: Mapped[int] = mapped_column(Integer)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ProviderLessonRow(Base):
    """What a provider's 400s taught about a model at an endpoint (engine/provider/lessons.py):
    parameters left out, the cap's name, the output mode, the context window; so the next
    process starts knowing it."""

    __tablename__ = "provider_lessons"

    endpoint: Mapped[str] = mapped_column(String(512), primary_key=True)
    model: Mapped[str] = mapped_column(String(256), primary_key=True)
    lesson: Mapped[dict[str, Any]] = mapped_column(json_type())
    learned_at: Mapped[datetime] = mapped_column(UTCDateTime())
