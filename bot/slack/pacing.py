"""Per-channel pacing: posts to one channel run one at a time, at least `interval` seconds apart
(from the start of one and from its answer to the start of the next).

Slack allows about one `chat.postMessage` per second per channel; bursts beyond that earn 429s
and, worse, replies that land out of order. Each channel gets a FIFO queue drained by one task,
so a thread's messages keep the order they were queued in (status, phase replies, summary).
Different channels do not wait on each other. A channel's task ends after `idle` quiet seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger("dialectic.slack.pacing")
T = TypeVar("T")

DEFAULT_INTERVAL = 1.0
DEFAULT_IDLE = 30.0


@dataclass(slots=True)
class _Job:
    call: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]


class ChannelPacer:
    """Serialises calls per channel with `interval` seconds between the starts of two calls."""

    def __init__(self, interval: float = DEFAULT_INTERVAL, *, idle: float = DEFAULT_IDLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval < 0:
            raise ValueError("interval must be >= 0")
        self.interval = interval
        self.idle = max(idle, interval)  # a channel's task outlives the spacing it owes
        self.clock = clock
        self._queues: dict[str, asyncio.Queue[_Job]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._last: dict[str, float] = {}
        self._closed = False

    def submit(self, channel: str, call: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """Queue `call` for `channel`; the future resolves with its result (or exception)."""
        if self._closed:
            raise RuntimeError("the pacer is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        queue = self._queues.setdefault(channel, asyncio.Queue())
        queue.put_nowait(_Job(call, future))
        task = self._tasks.get(channel)
        if task is None or task.done():
            self._tasks[channel] = asyncio.create_task(self._drain(channel, queue),
                                                       name=f"slack-pacer-{channel}")
        return future

    async def run(self, channel: str, call: Callable[[], Awaitable[T]]) -> T:
        """Queue `call` for `channel` and wait for its result."""
        return await self.submit(channel, call)

    def pending(self, channel: str) -> int:
        queue = self._queues.get(channel)
        return queue.qsize() if queue is not None else 0

    async def _drain(self, channel: str, queue: asyncio.Queue[_Job]) -> None:
        while True:
            try:
                job = await asyncio.wait_for(queue.get(), self.idle)
            except TimeoutError:
                if queue.empty():  # no await between here and the return: nothing can slip in
                    self._tasks.pop(channel, None)
                    self._queues.pop(channel, None)
                    self._last.pop(channel, None)  # idle >> interval: no spacing owed
                    return
                continue
            wait = self._last.get(channel, float("-inf")) + self.interval - self.clock()
            if wait > 0:
                try:
                    await asyncio.sleep(wait)
                except asyncio.CancelledError:
                    job.future.cancel()  # closed while it waited for its slot
                    raise
            self._last[channel] = self.clock()
            await _run(job)
            # counted again from the answer: a call that waited to be sent (a method Slack
            # paces, bot/slack/limits.py) must not land right behind the next one
            self._last[channel] = self.clock()

    async def close(self) -> None:
        """Stop every channel's task; queued calls that never ran are cancelled."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for queue in self._queues.values():
            while not queue.empty():
                queue.get_nowait().future.cancel()
        self._tasks.clear()
        self._queues.clear()


async def _run(job: _Job) -> None:
    if job.future.cancelled():
        return
    try:
        result = await job.call()
    except asyncio.CancelledError:
        job.future.cancel()
        raise
    except Exception as exc:  # handed to whoever awaits the future; they log or handle it
        if not job.future.done():
            job.future.set_exception(exc)
        return
    if not job.future.done():
        job.future.set_result(result)


__all__ = ["DEFAULT_INTERVAL", "ChannelPacer"]
