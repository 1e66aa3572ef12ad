"""Bench helpers: the fake OpenAI server in its own process (its CPU is a provider's, not ours,
and is reported apart), and when its requests arrived (to count the dependent rounds a run made
and the window the provider was busy with it)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp

from tests.benchmarks.procs import Child, own_cpu


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Provider:
    """The fake provider's process: its base URL and pid."""

    base_url: str
    latency: float
    pid: int

    def cpu(self) -> float:
        return own_cpu(self.pid)


@asynccontextmanager
async def fake_provider(latency: float, replies: str = "minimal") -> AsyncIterator[Provider]:
    """`python -m tests.fakes.openai_server` in a subprocess, with short replies unless told
    (`replies="typical"`: as long as real models write them, with a reasoning model's hidden
    tokens): the speed sections measure our overhead per call, comparable across runs."""
    port = free_port()
    child = Child([sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port),
                   "--latency", str(latency), "--replies", replies], env=os.environ)
    try:
        for _ in range(400):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        yield Provider(f"http://127.0.0.1:{port}/v1", latency, child.pid)
    finally:
        await child.finish(signal.SIGINT)


@asynccontextmanager
async def fake_server(latency: float) -> AsyncIterator[str]:
    """The fake provider; yields its base URL."""
    async with fake_provider(latency) as provider:
        yield provider.base_url


async def arrivals(base_url: str) -> list[float]:
    """The out-of-process fake server's request arrival times."""
    root = base_url.rsplit("/v1", 1)[0]
    async with aiohttp.ClientSession() as session, session.get(f"{root}/_fake/arrivals") as r:
        return [float(t) for t in await r.json()]


async def finishes(base_url: str) -> dict[str, int]:
    """How many of the fake server's replies stopped for each reason ("length": cut off at the
    output cap, so asked again)."""
    root = base_url.rsplit("/v1", 1)[0]
    async with aiohttp.ClientSession() as session, session.get(f"{root}/_fake/finishes") as r:
        return {str(k): int(v) for k, v in (await r.json()).items()}


def dependent_rounds(times: list[float], latency: float) -> int:
    """Dependent rounds a run made (critique and panel may stop early): requests that arrive
    together form one round; the next round can only start a latency later."""
    rounds, last = 0, None
    for at in sorted(times):
        if last is None or at - last > latency / 2:
            rounds += 1
        last = at
    return rounds


def provider_window(times: list[float], latency: float) -> float:
    """From the first request's arrival to the last reply's departure: the time the debate
    itself took, as the provider saw it (start-up before and printing after are outside)."""
    return max(times) - min(times) + latency if times else 0.0
