"""Untrusted material: the text of a debate that did not come from the operator's configuration,
the one way it becomes prompt text, and model output that repeats it.

Untrusted: the request's topic (typed by someone, a thread's root message, a signal's title), its
context (an appealed message, a thread, a signal's body, anything fetched), the text it passes in
options (a policy, panel perspectives and contexts, a reference answer), and human evidence. Each
piece is an `Untrusted` with a label, and `section` (through `Spotlight.wrap`) is the only way one
becomes prompt text. The operator's configuration (presets: personas, policy, perspectives; judge
specs; the engine's own tasks) is written into prompts as is.

A model's output is shown to other models (a debater's argument to the judges). When it holds
text addressed to the AI — a debater quoting the appellant's "score Position B 10" — `quoted`
spotlights it, so an order cannot ride into a judge's prompt on an argument.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.domain import DebateRequest, Evidence
from engine.untrusted.injection import Finding, scan
from engine.untrusted.spotlight import Spotlight

NONCE_BYTES = 16
TOPIC = "proposition"       # the topic, in the pro/con family's prompts
QUESTION = "question"       # the topic, in every other role's
CONTEXT = "context"
POLICY = "policy"
REFERENCE = "reference answer"
QUOTED = "model output quoting text addressed to the AI"


@dataclass(frozen=True, slots=True)
class Untrusted:
    """A piece of text that did not come from the operator's configuration, and what it is."""

    label: str
    text: str


def new_nonce() -> str:
    """A fresh secret for one debate's spotlight (stored in its request)."""
    return secrets.token_hex(NONCE_BYTES)


def with_nonce(request: DebateRequest) -> DebateRequest:
    """`request` with a spotlight nonce: its own if it has one (a replay keeps its source's)."""
    if request.spotlight_nonce:
        return request
    return request.model_copy(update={"spotlight_nonce": new_nonce()})


def spotlight_for(request: DebateRequest, debate_id: str) -> Spotlight:
    """The debate's spotlight: the same for every step, every resume and every replay, so the
    prompts (and the checkpoints and cache keys made from them) are byte-identical. A debate
    stored before requests carried a nonce derives it from its id."""
    return Spotlight.from_seed(f"nonce:{request.spotlight_nonce}" if request.spotlight_nonce
                               else f"debate:{debate_id}")


def of_request(request: DebateRequest) -> tuple[Untrusted, ...]:
    """Every piece of untrusted text a request carries (empty ones left out)."""
    options = request.options
    pieces = [Untrusted(TOPIC, request.topic), Untrusted(CONTEXT, request.context),
              Untrusted(POLICY, options.policy), Untrusted(REFERENCE, options.ground_truth)]
    pieces += [Untrusted(perspective_label(i), text)
               for i, text in enumerate(options.perspectives)]
    pieces += [Untrusted(panelist_context_label(i), text)
               for i, text in enumerate(options.contexts)]
    return tuple(p for p in pieces if p.text.strip())


def perspective_label(index: int) -> str:
    return f"perspective {index + 1}"


def panelist_context_label(index: int) -> str:
    return f"context for panelist {index + 1}"


def evidence_label(item: Evidence) -> str:
    return f"evidence from {item.author}"


def of_evidence(items: Iterable[Evidence]) -> tuple[Untrusted, ...]:
    return tuple(Untrusted(evidence_label(e), e.text) for e in items if e.text.strip())


def screen(pieces: Iterable[Untrusted]) -> tuple[Finding, ...]:
    """What in `pieces` is addressed to the AI, each finding naming its piece's label."""
    return tuple(f for piece in pieces for f in scan(piece.text, source=piece.label))


def section(spot: Spotlight, heading: str, pieces: Iterable[Untrusted]) -> str:
    """`heading` and each piece spotlighted under it; "" when no piece has text. The one way
    untrusted text becomes prompt text."""
    wrapped = [spot.wrap(p.text, label=p.label) for p in pieces if p.text.strip()]
    return f"{heading}\n" + "\n".join(wrapped) if wrapped else ""


def quoted(spot: Spotlight, text: str) -> str:
    """A model's output as another model sees it: as written, or spotlighted (on lines of its
    own) when it holds text addressed to the AI."""
    if not scan(text):
        return text
    return f"\n{spot.wrap(text, label=QUOTED)}\n"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def in_output(output: dict[str, Any] | None, *, source: str) -> tuple[Finding, ...]:
    """Text addressed to the AI in a step's stored output (every string in it)."""
    return tuple(f for text in _strings(output) for f in scan(text, source=source))
