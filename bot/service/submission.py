"""What submitting a debate gave: the debate (new, or the one that answers it) and its estimate."""

from __future__ import annotations

from dataclasses import dataclass

from engine.domain import Estimate
from storage.records import DebateRecord


@dataclass(frozen=True, slots=True)
class Submission:
    """`cached`: a finished debate's result answers it (`record` is that debate; the estimate
    says so, `cached_from`); `duplicate`: its idempotency key was seen before."""

    record: DebateRecord
    estimate: Estimate
    cached: bool = False
    duplicate: bool = False
    downgraded_from: str | None = None
