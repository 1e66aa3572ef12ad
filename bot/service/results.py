"""Reading a debate's result the same way on every surface."""

from __future__ import annotations

from engine.domain import DebateResult
from engine.vocabulary import ResultStatus


def is_incomplete(result: DebateResult) -> bool:
    """True when anything is missing: a partial result must never look complete."""
    return (not result.complete or bool(result.missing)
            or result.status in (ResultStatus.FAILED, ResultStatus.TIMED_OUT))
