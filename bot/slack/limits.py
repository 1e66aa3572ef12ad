"""Slack's per-method rate limits, honoured together: a 429 holds back every caller of that
method in that workspace, not only the one that got it.

slack_sdk's `AsyncRateLimitErrorRetryHandler` sleeps Retry-After and retries each refused call
on its own: 50 debates streaming at once that hit a method's limit together all sleep the same
Retry-After and come back together, and most are refused again (a 429 storm). `PacedRateLimits`
is that handler with a memory shared by every call of the client: a 429 closes the method (per
workspace token) until its Retry-After has passed, and from then on the method is paced at its
documented tier in that workspace (a sliding minute of at most that many calls; docs.slack.dev
"Rate limits", each method's page names its tier). A method Slack never refused is not paced
(the tiers are floors, and Slack allows bursts). The per-channel pacing of
posts is bot/slack/pacing.py's; the coalescing of updates is the notifier's and the plan's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("dialectic.slack")

#: method -> calls a minute per workspace, the documented floor of its tier.
TIERS: dict[str, int] = {"chat.update": 50, "chat.delete": 50, "chat.appendStream": 100,
                         "chat.startStream": 20, "chat.stopStream": 20}
MINUTE = 60.0
MARGIN = 0.25   # seconds: our clock and Slack's see a call at slightly different moments
DEFAULT_RETRY_AFTER = 1.0


@dataclass(slots=True)
class _Method:
    closed_until: float = 0.0
    paced: bool = False   # Slack refused it here once: its tier is enforced, keep to it
    sent: deque[float] = field(default_factory=deque)


class PacedRateLimits(AsyncRateLimitErrorRetryHandler):
    """Retries a 429 after its Retry-After, holding back the method's other callers too, and
    paces the method at its tier once Slack has refused it."""

    def __init__(self, max_retry_count: int = 5, *, window: float = MINUTE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.window = window   # a minute; tests shrink it with the fake Slack's windows
        self.clock = clock
        self.received: Counter[str] = Counter()   # 429s by method, for logs and the bench
        self._methods: dict[tuple[str, str], _Method] = {}
        self._turns: dict[tuple[str, str], asyncio.Lock] = {}

    def _of(self, token: str, method: str) -> _Method:
        return self._methods.setdefault((token, method), _Method())

    async def acquire(self, token: str, method: str) -> None:
        """Wait until a call to `method` may go: the method open again after a 429, and, while
        it is paced, fewer than its tier's calls in the last minute."""
        state = self._of(token, method)
        while (wait := self._wait(state, method, paced_only=True)) > 0:
            await asyncio.sleep(wait)
        state.sent.append(self.clock())

    def saturated(self, token: str, method: str) -> bool:
        """Whether a call to `method` now would wait, or be refused, in the token's workspace:
        closed by a 429, or its tier's calls already made in the last minute (counted whether
        or not Slack has refused it yet: the tier is what Slack promises)."""
        return self._until_room(token, method) > 0

    def turn(self, token: str, method: str) -> asyncio.Lock:
        """Held by calls that can wait (a coalesced status update) around `room` and the call:
        one at a time, so waiters woken together do not all go at once into a 429."""
        return self._turns.setdefault((token, method), asyncio.Lock())

    async def room(self, token: str, method: str) -> None:
        """Wait until `saturated` is False: for calls that can wait their turn rather than
        risk a 429, whether or not Slack has refused the method (hold its `turn`)."""
        while (wait := self._until_room(token, method)) > 0:
            await asyncio.sleep(wait)

    def _until_room(self, token: str, method: str) -> float:
        state = self._methods.get((token, method))
        return 0.0 if state is None else self._wait(state, method, paced_only=False)

    def _wait(self, state: _Method, method: str, *, paced_only: bool) -> float:
        """Seconds until a call to `method` may go: closed by a 429, or its tier's calls made
        in the last minute (`paced_only`: only once Slack has refused it here)."""
        now = self.clock()
        while state.sent and state.sent[0] <= now - self.window:
            state.sent.popleft()
        wait = state.closed_until - now
        limit = TIERS.get(method)
        if limit is not None and (state.paced or not paced_only) and len(state.sent) >= limit:
            wait = max(wait, state.sent[0] + self.window + MARGIN - now)
        return wait

    def refused(self, token: str, method: str, retry_after: float) -> None:
        """Slack said 429: the method waits `retry_after` for everyone, then is paced."""
        state, now = self._of(token, method), self.clock()
        state.closed_until = max(state.closed_until, now + retry_after)
        state.paced = True
        self.received[method] += 1
        log.info("Slack: %s rate limited; every call to it waits %.0f s, then at most %s go "
                 "a minute", method, retry_after, TIERS.get(method, "as many as Slack allows"))

    async def prepare_for_next_attempt_async(
            self, *, state: RetryState, request: HttpRequest,
            response: HttpResponse | None = None, error: Exception | None = None) -> None:
        if response is None:
            raise error or RuntimeError("a retry without a response")
        token, method = limits_token(request.headers), _method(request.url)
        self.refused(token, method, _retry_after(response.headers))
        state.next_attempt_requested = True
        await self.acquire(token, method)
        state.increment_current_attempt()


def paced_limits(client: AsyncWebClient) -> PacedRateLimits | None:
    """The client's shared 429 handler, if it has one."""
    for handler in client.retry_handlers:
        if isinstance(handler, PacedRateLimits):
            return handler
    return None


def _method(url: str) -> str:
    return url.rsplit("/", 1)[-1].split("?", 1)[0]


def limits_token(headers: Mapping[str, str | list[str]] | None) -> str:
    """The workspace token a request carries (limits are per workspace)."""
    for name, value in (headers or {}).items():
        if name.lower() == "authorization":
            found = value[0] if isinstance(value, list) else value
            return str(found).removeprefix("Bearer ").strip()
    return ""


def _retry_after(headers: Mapping[str, str | list[str]]) -> float:
    for name, values in headers.items():
        if name.lower() == "retry-after" and values:
            try:
                return max(0.0, float(values[0] if isinstance(values, list) else values))
            except ValueError:
                break
    return DEFAULT_RETRY_AFTER


__all__ = ["MINUTE", "TIERS", "PacedRateLimits", "limits_token", "paced_limits"]
