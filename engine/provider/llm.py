"""What the engine needs from a language model: one schema-validated completion at a time.

`engine.provider.gateway.OpenAIGateway` implements it over any OpenAI-compatible endpoint;
`engine.provider.rehearsal.RehearsalModel` implements it offline. The runner never sees the SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from engine.domain import Usage

T = TypeVar("T", bound=BaseModel)

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Prompt:
    """A step's prompt: the system persona and the user turn. Hashed for the checkpoint."""

    system: str
    user: str

    def messages(self) -> list[Message]:
        return [Message("system", self.system), Message("user", self.user)]


@dataclass(frozen=True, slots=True)
class Reply(Generic[T]):
    """A validated completion. `attempts` counts the requests sent (a refused 429 too);
    `calls` the replies the provider billed (an invalid one that was re-asked too)."""

    value: T
    usage: Usage
    model: str
    attempts: int = 1
    latency_s: float = 0.0
    calls: int = 1
    #: why the provider stopped generating the reply returned ("stop" unless it said otherwise)
    finish_reason: str = "stop"


@dataclass(slots=True)
class Meter:
    """What the provider has billed for one call so far, brought up to date as each reply
    arrives, so the runner can count it however the call ends: a reply, an error, a timeout."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def bill(self, usage: Usage, model: str) -> None:
        self.calls += 1
        self.usage = self.usage + usage
        self.model = model or self.model


@dataclass(frozen=True, slots=True)
class CallSpec(Generic[T]):
    """Everything one call needs; `on_retry` lets the runner report retries as events, and
    `meter` (when given) is billed for every reply the provider sends back. `step` is the step's
    key, sent along (X-Dialectic-Step) so a provider's logs can tell calls apart. Which of the
    sampling and reasoning parameters reach the provider is the model profile's choice
    (engine/provider/profiles.py), not the caller's."""

    model: str
    prompt: Prompt
    schema: type[T]
    role: str
    temperature: float | None = None
    timeout: float = 60.0
    on_retry: Callable[[int, str, float], Awaitable[None]] | None = field(default=None)
    meter: Meter | None = None
    step: str = ""
    #: the output cap sent (`max_completion_tokens`): the plan's reply size with room to spare
    max_output_tokens: int | None = None
    #: a reasoning model's effort ("minimal", "low", "medium", "high"); None: the model's default
    reasoning_effort: str | None = None


class LLMClient(Protocol):
    """One completion whose output validates against `spec.schema`.

    Raises `engine.errors.LLMAuthError` (fail the debate), `LLMContentFiltered` (record the step as
    filtered), or another `LLMError` once the retries its kind allows are spent.
    """

    @property
    def rehearsal(self) -> bool: ...

    async def complete(self, spec: CallSpec[T]) -> Reply[T]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class KnowsWindows(Protocol):
    """A client that can tell a model's context window (configured, learned from a 400, or
    reported by a local server), so a debate its windows cannot hold stops before any call."""

    async def window(self, model: str) -> int | None: ...
