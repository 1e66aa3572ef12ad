"""The per-channel pacing queue: order, spacing, independence of channels, failures, closing."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from bot.slack.pacing import ChannelPacer

INTERVAL = 0.05
SLACK = 0.004  # asyncio may wake a hair before the deadline: lower bounds get this margin


async def test_calls_to_one_channel_run_in_order_at_least_interval_apart() -> None:
    pacer = ChannelPacer(INTERVAL)
    loop = asyncio.get_running_loop()
    started: list[tuple[int, float]] = []

    def job(n: int):  # type: ignore[no-untyped-def]
        async def call() -> int:
            started.append((n, loop.time()))
            await asyncio.sleep(0)
            return n

        return call

    futures = [pacer.submit("C1", job(n)) for n in range(5)]
    assert await asyncio.gather(*futures) == [0, 1, 2, 3, 4]
    assert [n for n, _ in started] == [0, 1, 2, 3, 4]
    gaps = [b - a for (_, a), (_, b) in itertools.pairwise(started)]
    assert min(gaps) >= INTERVAL - SLACK
    await pacer.close()


async def test_channels_do_not_wait_for_each_other() -> None:
    pacer = ChannelPacer(10.0)  # a long interval: a second call to C1 would wait 10 s
    first = pacer.submit("C1", _value("c1"))
    second = pacer.submit("C2", _value("c2"))
    assert await asyncio.wait_for(asyncio.gather(first, second), 2.0) == ["c1", "c2"]
    later = pacer.submit("C1", _value("late"))
    await asyncio.sleep(0.05)
    assert not later.done() and pacer.pending("C1") == 0  # taken, waiting for its slot
    await pacer.close()
    assert later.cancelled()


async def test_a_failing_call_fails_its_future_and_the_queue_goes_on() -> None:
    pacer = ChannelPacer(0.0)

    async def boom() -> None:
        raise RuntimeError("slack said no")

    failed = pacer.submit("C1", boom)
    fine = pacer.submit("C1", _value("ok"))
    with pytest.raises(RuntimeError, match="slack said no"):
        await failed
    assert await fine == "ok"
    await pacer.close()


async def test_an_idle_channel_task_ends_and_a_new_call_starts_one() -> None:
    pacer = ChannelPacer(0.0, idle=0.02)
    assert await pacer.run("C1", _value(1)) == 1
    await asyncio.sleep(0.1)
    assert pacer._tasks == {} and pacer._queues == {}
    assert await pacer.run("C1", _value(2)) == 2
    await pacer.close()
    with pytest.raises(RuntimeError):
        pacer.submit("C1", _value(3))


def _value(value: object):  # type: ignore[no-untyped-def]
    async def call() -> object:
        return value

    return call
