"""The schema as typed SQLAlchemy 2 models: `Base`, the column types, and the tables a debate's own
path uses (every process that runs one maps these). The service's other tables are defined beside
their repositories (*_rows.py, installations.py), so a process maps them only where it uses them;
storage/schema.py's `METADATA` is every table. Repositories turn these rows into engine types and
the service's records.

Migrations (storage/migrations/versions) are written by hand from these models; a test compares
the migrated database with `METADATA` on SQLite and PostgreSQL so the two cannot drift.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator, TypeEngine

_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")  # an unescaped \u0000 in JSON text

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, aware UTC out, on both databases (SQLite keeps no offset itself).

    SQLite stores a fixed-width UTC text form, so comparisons and ORDER BY stay chronological.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: storage takes aware UTC datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JSONDocument(TypeDecorator[Any]):
    """JSON on SQLite, JSONB on PostgreSQL; Python None is SQL NULL, not JSON 'null'.

    `JSON().with_variant(JSONB(), "postgresql")` would say the same, but needs PostgreSQL's JSONB
    class when the models are defined, and importing it imports SQLAlchemy's whole PostgreSQL
    dialect and its five drivers (about 0.02 s), which a process on SQLite (`dialectic run`) never
    uses: the dialect's type is chosen here once a connection asks for it."""

    impl = JSON(none_as_null=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))


def json_type() -> TypeEngine[Any]:
    """JSON on SQLite, JSONB on PostgreSQL; Python None is SQL NULL, not JSON 'null'."""
    return JSONDocument()


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data, the form both databases store and hashes are computed over:
    datetimes and other objects become strings, NaN and infinities become null and NUL characters
    are dropped (PostgreSQL's JSONB accepts neither).

    Data that is plain already (what a step's output and an event's data are: dicts with string
    keys, lists, strings without NUL, finite numbers; a str subclass, such as a StrEnum, becomes
    its text) is copied by a walk, which gives what the trip through JSON text gives without
    encoding and parsing every string (a reply's kilobytes, for every step); anything else takes
    that trip.
    """
    try:
        return _plain(value)
    except (_NotPlain, RecursionError):  # a cycle: the json module says so as it always did
        pass
    text = json.dumps(value, default=str, ensure_ascii=False)
    if "\\u0000" in text:  # rare: only then is the text searched for unescaped NULs
        text = _JSON_NUL.sub(r"\1", text)
    return json.loads(text, parse_constant=_null)


_INT_BITS = 14_000  # a longer int has more digits than `json.dumps` writes (it raises)


class _NotPlain(Exception):
    """Data `_plain` leaves to the trip through JSON text."""


def _plain(value: Any) -> Any:
    """A copy of `value` if it is plain JSON data as `json.loads` returns it (exact types: a str,
    int or bool subclass, such as an enum, is encoded otherwise); raises `_NotPlain` if not."""
    kind = type(value)
    if kind is str:
        if "\x00" in value:
            raise _NotPlain
        return value
    if kind is dict:
        copied = {}
        for key, item in value.items():
            if type(key) is not str:
                key = _text(key)
            if "\x00" in key:
                raise _NotPlain
            copied[key] = _plain(item)
        return copied
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if value is None or kind is bool or (kind is int and value.bit_length() < _INT_BITS):
        return value
    if kind is float and math.isfinite(value):
        return value
    text = _text(value)   # a StrEnum (a role, a side, a status): events carry many
    if "\x00" in text:
        raise _NotPlain
    return text


def _text(value: Any) -> str:
    """A str subclass's text, as JSON writes it (its characters, whatever its `__str__`);
    raises `_NotPlain` for anything else."""
    if not isinstance(value, str):
        raise _NotPlain
    return str.__str__(value)


def _null(_constant: str) -> None:
    """NaN and the infinities, which JSON cannot hold, become null."""
    return None


def big_id() -> TypeEngine[int]:
    """BIGINT identity on PostgreSQL; INTEGER on SQLite, where only that aliases the rowid."""
    return BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class DebateRow(Base):
    __tablename__ = "debates"
    __table_args__ = (
        Index("ix_debates_status_created_at", "status", "created_at"),
        Index("ix_debates_topic_key_created_at", "topic_key", "created_at"),
        Index("ix_debates_created_at_id", "created_at", "id"),   # newest first: listings
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    topic: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(32))
    preset: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32))
    request: Mapped[dict[str, Any]] = mapped_column(json_type())
    origin: Mapped[dict[str, Any]] = mapped_column(json_type())
    requested_by: Mapped[str] = mapped_column(String(255))
    estimate_usd: Mapped[float] = mapped_column(Float)
    reserved_usd: Mapped[float] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float)
    result: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    error: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[str | None] = mapped_column(String(64), index=True)
    cached_from: Mapped[str | None] = mapped_column(String(64))
    downgraded_from: Mapped[str | None] = mapped_column(String(32))
    topic_key: Mapped[str] = mapped_column(String(64))
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True)
    reused_steps: Mapped[list[str] | None] = mapped_column(json_type(), nullable=True)
    # engine.untrusted.injection findings (as dicts): text addressed to the AI in its untrusted
    # material
    injection: Mapped[list[dict[str, Any]] | None] = mapped_column(json_type(), nullable=True)


class StepRow(Base):
    __tablename__ = "steps"
    __table_args__ = (UniqueConstraint("debate_id", "key"),)  # no step is ever executed twice

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE")
    )
    key: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(64))
    phase: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16))
    output: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    prompt_hash: Mapped[str] = mapped_column(String(64))
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer, server_default="0")      # of prompt
    reasoning_tokens: Mapped[int] = mapped_column(Integer, server_default="0")   # of completion
    cost_usd: Mapped[float] = mapped_column(Float)
    latency_s: Mapped[float] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer)
    calls: Mapped[int] = mapped_column(Integer, server_default="0")  # billed replies
    error: Mapped[str] = mapped_column(Text)
    rehearsal: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AuditEventRow(Base):
    """One link of a hash chain. `chain` is the debate id, or "global" when there is none, so
    UNIQUE(chain, seq) holds on both databases (NULLs never collide in a unique constraint)."""

    __tablename__ = "audit_events"
    __table_args__ = (UniqueConstraint("chain", "seq"),)

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    chain: Mapped[str] = mapped_column(String(64))
    debate_id: Mapped[str | None] = mapped_column(String(64), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(64))
    actor: Mapped[str] = mapped_column(String(255))
    data: Mapped[dict[str, Any]] = mapped_column(json_type())
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class ReviewRow(Base):
    __tablename__ = "reviews"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str] = mapped_column(Text)
    channel_id: Mapped[str | None] = mapped_column(String(64))
    message_ts: Mapped[str | None] = mapped_column(String(64))
    decided_by: Mapped[str | None] = mapped_column(String(255))
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    decision_note: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    spot_check: Mapped[bool] = mapped_column(Boolean, server_default=false())
    about: Mapped[str | None] = mapped_column(String(16))
    named_winner: Mapped[str | None] = mapped_column(String(8))


class PanelRow(Base):
    """A judged debate as routed: what each judge saw and said, and the routing's inputs. What
    the judge audit, the routing audit and the threshold suggester read (with the reviews)."""

    __tablename__ = "panels"
    __table_args__ = (Index("ix_panels_preset_finished_at", "preset", "finished_at"),)

    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), primary_key=True
    )
    preset: Mapped[str] = mapped_column(String(64))
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    alpha: Mapped[float | None] = mapped_column(Float)
    band: Mapped[str] = mapped_column(String(16))
    routing: Mapped[str] = mapped_column(String(16))
    irreconcilable: Mapped[bool] = mapped_column(Boolean)
    complete: Mapped[bool] = mapped_column(Boolean)
    winner: Mapped[str | None] = mapped_column(String(8))
    lengths: Mapped[dict[str, Any]] = mapped_column(json_type())
    verdicts: Mapped[list[dict[str, Any]]] = mapped_column(json_type())
    weights: Mapped[dict[str, Any]] = mapped_column(json_type())
    thresholds: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    spot_check: Mapped[bool] = mapped_column(Boolean)
    spot_check_fraction: Mapped[float] = mapped_column(Float)


class AppliedThresholdsRow(Base):
    """Alpha cut-offs an operator applied to a preset; the newest row per preset is in force."""

    __tablename__ = "applied_thresholds"
    __table_args__ = (Index("ix_applied_thresholds_preset_applied_at", "preset", "applied_at"),)

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    preset: Mapped[str] = mapped_column(String(64))
    thresholds: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)
    applied_by: Mapped[str] = mapped_column(String(255))
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime())
    note: Mapped[str] = mapped_column(Text)
    evidence: Mapped[dict[str, Any] | None] = mapped_column(json_type(), nullable=True)


class BudgetDayRow(Base):
    __tablename__ = "budget_days"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    cap_usd: Mapped[float] = mapped_column(Float)
    reserved_usd: Mapped[float] = mapped_column(Float)
    spent_usd: Mapped[float] = mapped_column(Float)
    alerted: Mapped[bool] = mapped_column(Boolean)


class BudgetLedgerRow(Base):
    """reserve: +amount reserved; release: -amount reserved; settle: +amount spent."""

    __tablename__ = "budget_ledger"
    __table_args__ = (Index("ix_budget_ledger_day_debate_id", "day", "debate_id"),
                      Index("ix_budget_ledger_debate_id", "debate_id"))  # a debate's sums

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    day: Mapped[date] = mapped_column(Date, ForeignKey("budget_days.day"))
    debate_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    amount_usd: Mapped[float] = mapped_column(Float)
    at: Mapped[datetime] = mapped_column(UTCDateTime())


class EvidenceRow(Base):
    __tablename__ = "evidence"

    id: Mapped[int] = mapped_column(big_id(), primary_key=True, autoincrement=True)
    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), index=True
    )
    author: Mapped[str] = mapped_column(String(255))
    text: Mapped[str] = mapped_column(Text)
    source_id: Mapped[str | None] = mapped_column(String(255), unique=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime())


class JudgeCacheRow(Base):
    __tablename__ = "judge_cache"

    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[Any] = mapped_column(json_type())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class FeedbackRow(Base):
    """A reader's feedback on a result (👍 / 👎 and an optional "Why?"), one per reader and
    debate: a second press replaces the first. Kept apart from the reviewers' decisions
    (`reviews`): a reader's thumb is not a reviewer's label (engine/oversight/feedback.py)."""

    __tablename__ = "feedback"
    __table_args__ = (Index("ix_feedback_preset_updated_at", "preset", "updated_at"),)

    debate_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("debates.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    team_id: Mapped[str | None] = mapped_column(String(64))
    rating: Mapped[str | None] = mapped_column(String(8))
    reason: Mapped[str] = mapped_column(Text)
    preset: Mapped[str] = mapped_column(String(64))
    routing: Mapped[str] = mapped_column(String(16))
    rehearsal: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AnsweringModelRow(Base):
    """Which model an endpoint answered with for a name asked (an Azure deployment, an alias, a
    gateway id), and when that was learnt: holds and estimates price what answers, in every
    process (engine/money/answering.py)."""

    __tablename__ = "answering_models"

    endpoint: Mapped[str] = mapped_column(String(512), primary_key=True)
    asked: Mapped[str] = mapped_column(String(255), primary_key=True)
    answered: Mapped[str] = mapped_column(String(255))
    learned_at: Mapped[datetime] = mapped_column(UTCDateTime())
