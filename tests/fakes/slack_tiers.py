"""Slack's documented Web API rate limits, enforced by the fake when asked (`enforce_tiers`).

Slack limits each method per app per workspace by tier (docs.slack.dev, "Rate limits"; each
method's reference page names its tier): Tier 2 20+ a minute, Tier 3 50+, Tier 4 100+, and
`chat.postMessage` about one message a second per channel. The fake takes the documented floor
as the limit, over a sliding window: a call beyond it gets HTTP 429 `ratelimited` with
`Retry-After` (whole seconds, as Slack sends) until the oldest call in the window leaves it.
`scale` shrinks every window (0.05: a minute lasts 3 s) so a test of many debates stays short;
the limits themselves do not change."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

#: method -> calls per minute per workspace (the tier's documented floor).
TIERS: dict[str, int] = {
    "chat.update": 50,          # Tier 3
    "chat.delete": 50,          # Tier 3
    "chat.appendStream": 100,   # Tier 4 (its reference page)
    "chat.stopStream": 20,      # Tier 2 (its reference page)
    "chat.startStream": 20,     # taken as chat.stopStream's Tier 2 (its page was not found)
}
PER_CHANNEL: dict[str, tuple[int, float]] = {"chat.postMessage": (1, 1.0)}  # 1 a second
MINUTE = 60.0


class SlackTiers:
    """The enforcing half: which calls are over their method's limit, and for how long."""

    def __init__(self) -> None:
        self.tier_scale: float | None = None
        self._sent: dict[tuple[str, str], deque[float]] = {}
        self.tier_clock: Callable[[], float] = time.monotonic

    def enforce_tiers(self, *, scale: float = 1.0) -> None:
        """From now on, calls beyond Slack's documented limits get HTTP 429 with Retry-After."""
        self.tier_scale = scale

    def over_tier(self, token: str, method: str, args: dict[str, object]) -> int | None:
        """Retry-After (seconds) when this call is over its limit, else None (and counted)."""
        if self.tier_scale is None:
            return None
        if method in PER_CHANNEL:
            limit, window = PER_CHANNEL[method]
            key = (token, f"{method}:{args.get('channel', '')}")
        elif method in TIERS:
            limit, window = TIERS[method], MINUTE
            key = (token, method)
        else:
            return None
        window *= self.tier_scale
        now = self.tier_clock()
        sent = self._sent.setdefault(key, deque())
        while sent and sent[0] <= now - window:
            sent.popleft()
        if len(sent) >= limit:
            return max(1, math.ceil(sent[0] + window - now))
        sent.append(now)
        return None


__all__ = ["MINUTE", "PER_CHANNEL", "TIERS", "SlackTiers"]
