"""A step's result as the protocols see it (engine/core/runner.py `DebateContext.step` returns
it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from engine.domain import StepRecord, canonical_json, sha256
from engine.provider.llm import Prompt
from engine.vocabulary import StepStatus

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class StepOutcome(Generic[T]):
    """A step's result. `value` is None when the step was degraded or filtered."""

    key: str
    status: StepStatus
    value: T | None
    record: StepRecord
    reused: bool = False

    @property
    def ok(self) -> bool:
        return self.value is not None

    def missing_note(self) -> str:
        """What later prompts and transcripts show instead of a missing output."""
        if self.status is StepStatus.FILTERED:
            return "[filtered: the provider's content filter withheld this output]"
        if self.status is StepStatus.REFUSED:
            return f"[refused: the model declined to answer, saying: {self.record.error}]"
        return f"[degraded: no output — {self.record.error or 'the call did not finish'}]"


def prompt_hash(prompt: Prompt) -> str:
    """What a step's record keeps of its prompt: the hash of its canonical JSON.

    The same bytes as `sha256(canonical_json({"system": ..., "user": ...}))`, with each string
    encoded by pydantic-core (3-4 times faster than the json module on the tens of kilobytes of
    a judge's prompt, and already UTF-8); a string it cannot encode (a lone surrogate) goes the
    json way, which fails as it always did."""
    try:
        body = b"".join((b'{"system":', to_json(prompt.system), b',"user":', to_json(prompt.user),
                         b"}"))
    except PydanticSerializationError:
        return sha256(canonical_json({"system": prompt.system, "user": prompt.user}))
    return hashlib.sha256(body).hexdigest()
