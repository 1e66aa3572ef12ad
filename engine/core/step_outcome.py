"""A step's result as the protocols see it (engine/core/runner.py `DebateContext.step` returns
it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

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
    """What a step's record keeps of its prompt: the hash of its canonical JSON."""
    return sha256(canonical_json({"system": prompt.system, "user": prompt.user}))
