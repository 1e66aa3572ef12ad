"""SQLite's one writer taken in turn (storage/db.py WriteTurns): an urgent writer (a Slack start
before its ack) goes before the writers already waiting; the rest keep their order; a waiter
cancelled while waiting, or just as the lock reached it, never keeps the lock from the others."""

from __future__ import annotations

import asyncio

from storage.db import WriteTurns


async def _take(turns: WriteTurns, name: str, order: list[str], urgent: bool = False) -> None:
    await turns.acquire(urgent)
    order.append(name)
    await asyncio.sleep(0)
    turns.release()


async def test_an_urgent_writer_goes_before_those_already_waiting() -> None:
    turns, order = WriteTurns(), []
    await turns.acquire()   # a writer holds it
    waiting = [asyncio.create_task(_take(turns, f"w{i}", order)) for i in range(3)]
    await asyncio.sleep(0)
    urgent = asyncio.create_task(_take(turns, "urgent", order, urgent=True))
    await asyncio.sleep(0)
    turns.release()
    await asyncio.gather(*waiting, urgent)
    assert order == ["urgent", "w0", "w1", "w2"]


async def test_a_cancelled_waiter_does_not_keep_the_lock() -> None:
    turns, order = WriteTurns(), []
    await turns.acquire()
    gone = asyncio.create_task(turns.acquire())
    after = asyncio.create_task(_take(turns, "after", order))
    await asyncio.sleep(0)
    turns.release()          # handed to `gone` ...
    gone.cancel()            # ... which is cancelled before it runs: it passes the lock on
    await asyncio.gather(gone, return_exceptions=True)
    await asyncio.wait_for(after, 1.0)
    assert order == ["after"]
    await asyncio.wait_for(turns.acquire(), 1.0)   # and it is free again afterwards
