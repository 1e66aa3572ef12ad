"""The shared limiter's view of a method's minute in a workspace (bot/slack/limits.py): what the
stream decision and the status updates read before spending a call."""

from __future__ import annotations

import asyncio

from bot.slack.limits import TIERS, PacedRateLimits

TOKEN, OTHER = "xoxb-one", "xoxb-two"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_method_is_saturated_once_its_tier_is_spent_in_the_minute() -> None:
    clock = Clock()
    limits = PacedRateLimits(clock=clock)

    async def spend(n: int) -> None:
        for _ in range(n):
            await limits.acquire(TOKEN, "chat.startStream")

    limit = TIERS["chat.startStream"]
    asyncio.run(spend(limit - 1))
    assert not limits.saturated(TOKEN, "chat.startStream")   # never refused, one call left
    asyncio.run(spend(1))
    assert limits.saturated(TOKEN, "chat.startStream")
    assert not limits.saturated(OTHER, "chat.startStream")    # per workspace
    assert not limits.saturated(TOKEN, "chat.stopStream")     # per method
    clock.now += limits.window
    assert not limits.saturated(TOKEN, "chat.startStream")   # the minute has passed


def test_a_method_closed_by_a_429_is_saturated_until_its_retry_after() -> None:
    clock = Clock()
    limits = PacedRateLimits(clock=clock)
    limits.refused(TOKEN, "chat.stopStream", 3.0)
    assert limits.saturated(TOKEN, "chat.stopStream")
    clock.now += 3.0
    assert not limits.saturated(TOKEN, "chat.stopStream")


def test_room_waits_until_the_minute_has_a_call_to_spare() -> None:
    limits = PacedRateLimits(window=0.2)

    async def run() -> tuple[bool, bool]:
        for _ in range(TIERS["chat.update"]):
            await limits.acquire(TOKEN, "chat.update")
        full = limits.saturated(TOKEN, "chat.update")
        async with limits.turn(TOKEN, "chat.update"):
            await asyncio.wait_for(limits.room(TOKEN, "chat.update"), 5)
        return full, limits.saturated(TOKEN, "chat.update")

    assert asyncio.run(run()) == (True, False)
