"""Output caps planned with a reasoning model's hidden reasoning.

A reasoning model spends hidden reasoning tokens before it writes a word, and they count against
the output cap. How many depends on the model and the effort asked, not on the step: a judge at
`low` effort thinks about as much as a side at `low`, and the same judge at `medium` several times
more. A cap of twice the step's learned reply size (reasoning included) is right while the effort
stays what the history was learned at, and cuts replies off as soon as it rises; and a reply cut at
its cap is paid for, then asked again with twice the cap.

So a call's cap is its visible reply's high size (learned per model and step kind, reasoning
taken out) with room to spare, plus the most hidden reasoning the model has been seen to spend at
this effort (`Thinking`, learned per model and effort from this process's replies; the effort's
prior until there are enough), and never less than the cap the reply sizes alone would give.
"""

from __future__ import annotations

import math
from collections import deque

from engine.provider.profiles import is_reasoning_model, undated

#: A reasoning model's hidden reasoning tokens by effort before there is data: (typical, high);
#: None is "medium".
REASONING_TOKENS: dict[str, tuple[int, int]] = {
    "minimal": (100, 500), "low": (300, 1_200), "medium": (800, 3_000), "high": (2_000, 8_000),
}
#: A call's output cap: this many times its high reply size, within these bounds.
CAP_FACTOR, CAP_FLOOR, CAP_CEILING = 2, 1_024, 32_768
#: Replies of one model and effort needed before what they spent replaces the prior; the newest
#: kept; the most seen is stretched by this margin (a longer think than any seen yet).
MIN_REPLIES = 5
REPLIES_KEPT = 200
REASONING_MARGIN = 1.25


def prior_reasoning(model: str, effort: str | None) -> tuple[int, int]:
    """(typical, high) hidden reasoning tokens of a reply before any was seen: none for a model
    that does not reason, else by effort (medium when unset)."""
    if not is_reasoning_model(model):
        return 0, 0
    return REASONING_TOKENS.get(effort or "medium", REASONING_TOKENS["medium"])


class Thinking:
    """Hidden reasoning tokens per reply, by (model, effort), from the replies this process saw.
    One per process (the service keeps it across its size books), so a serve learns once."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str | None], deque[int]] = {}
        #: the most of each key's replies kept (`max` of its deque, kept as they come and go)
        self._most: dict[tuple[str, str | None], int] = {}
        #: moves whenever `most` would answer differently for some model and effort (what a
        #: memo of estimates made with these figures is keyed by: engine/core/planning.py)
        self.version = 0

    def observe(self, model: str, effort: str | None, reasoning_tokens: int) -> None:
        key = (undated(model), effort)
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = deque(maxlen=REPLIES_KEPT)
        before = self._most_of(key, seen)
        tokens = max(reasoning_tokens, 0)
        dropped = seen[0] if len(seen) == seen.maxlen else None
        seen.append(tokens)
        most = self._most.get(key, 0)
        # the most kept: the new reply's when larger, all of them again only when the reply
        # that fell out of the window was the most
        self._most[key] = max(seen) if dropped is not None and dropped >= most else max(
            most, tokens)
        if self._most_of(key, seen) != before:
            self.version += 1

    def _most_of(self, key: tuple[str, str | None], seen: deque[int]) -> int | None:
        """The most of the replies seen, once there are enough to go by."""
        return self._most[key] if len(seen) >= MIN_REPLIES else None

    def most(self, model: str, effort: str | None) -> int:
        """The most reasoning a reply of this model and effort may spend: the most seen (with a
        margin) once there are `MIN_REPLIES`, else the prior's high figure."""
        key = (undated(model), effort)
        seen = self._seen.get(key)
        most = None if seen is None else self._most_of(key, seen)
        if most is not None:
            return math.ceil(most * REASONING_MARGIN)
        return prior_reasoning(model, effort)[1]


def output_cap(completion_high: int, *, visible_high: int | None = None,
               reasoning_most: int = 0) -> int:
    """The output cap a call is sent with: room to spare over its high reply size
    (`completion_high`, reasoning included) and, where the visible part is known, twice that
    plus the most hidden reasoning its model spends at this effort, whichever is larger."""
    cap = CAP_FACTOR * completion_high
    if visible_high is not None:
        cap = max(cap, CAP_FACTOR * visible_high + reasoning_most)
    return min(max(cap, CAP_FLOOR), CAP_CEILING)


__all__ = ["CAP_CEILING", "CAP_FACTOR", "CAP_FLOOR", "REASONING_TOKENS", "Thinking",
           "output_cap", "prior_reasoning"]
