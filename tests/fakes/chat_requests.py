"""Chat-completion requests as the fake OpenAI server reads, matches and records them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Body = dict[str, Any]
Matcher = str | Callable[[Body], bool]
ReplySource = str | Body | Callable[[Body], str | Body]


def message_text(message: Body) -> str:
    """A message's text, whether `content` is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def last_text(body: Body, role: str) -> str:
    """The text of the last message of `role` in a request body ("" when there is none)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == role:
            return message_text(message)
    return ""


def matches(match: Matcher, body: Body) -> bool:
    """A string matches a substring of the system message or of a user message (the last, or an
    earlier one: a re-ask appends a user turn, and it still belongs to the same step)."""
    if callable(match):
        return bool(match(body))
    return any(
        isinstance(m, dict) and m.get("role") in ("system", "user") and match in message_text(m)
        for m in body.get("messages") or []
    )


@dataclass
class RecordedRequest:
    """One request as the fake saw it; `outcome` and `usage` are filled in when it is answered."""

    body: Body
    at: float  # time.monotonic() on arrival
    step: str  # X-Dialectic-Step or X-Dialectic-Role header, "" when absent
    authorized: bool  # whether an Authorization header was sent (its value is never kept)
    path: str
    role: str = ""  # X-Dialectic-Role header
    outcome: str = "pending"
    usage: dict[str, int] | None = None
    finish_reason: str = ""  # of the reply sent ("length": cut off at its output cap)
    cost: float | None = None  # what a gateway said the reply cost (`usage.cost`, USD)
    obeyed: list[str] = field(default_factory=list)  # orders followed in obedient mode

    @property
    def messages(self) -> list[Body]:
        return list(self.body.get("messages") or [])

    @property
    def system(self) -> str:
        return last_text(self.body, "system")

    @property
    def last_user(self) -> str:
        return last_text(self.body, "user")


@dataclass
class Rule:
    match: Matcher
    kind: str
    times: int | None
    used: int = 0
    reply: ReplySource | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Body | None = None
    seconds: float = 0.0

    def take(self, body: Body) -> bool:
        """Whether this rule applies to `body`; a rule that applies uses up one of its times."""
        if self.times is not None and self.used >= self.times:
            return False
        if not matches(self.match, body):
            return False
        self.used += 1
        return True


def first_rule(rules: list[Rule], body: Body) -> Rule | None:
    """The first rule that applies to `body` (using up one of its times), or None."""
    return next((rule for rule in rules if rule.take(body)), None)
