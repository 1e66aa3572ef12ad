"""Bench helpers: the fake OpenAI server in its own process, and when its requests arrived
(to count the dependent rounds a run made)."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def fake_server(latency: float) -> AsyncIterator[str]:
    """`python -m tests.fakes.openai_server` in a subprocess; yields its base URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port), "--latency",
        str(latency), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.send_signal(signal.SIGINT)
        await proc.wait()


async def arrivals(base_url: str) -> list[float]:
    """The out-of-process fake server's request arrival times."""
    root = base_url.rsplit("/v1", 1)[0]
    async with aiohttp.ClientSession() as session, session.get(f"{root}/_fake/arrivals") as r:
        return [float(t) for t in await r.json()]
