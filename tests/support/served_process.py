"""`dialectic serve` as its own process, for tests and the soak that stop, kill and restart it.

    server = ServedProcess(env, log_path)
    await server.start()                      # returns once /healthz answers (200 or 503)
    status, health = await server.get("/healthz")
    await server.kill()                       # SIGKILL: no graceful anything
    code = await server.terminate()           # SIGTERM and its exit status

Its log goes to a file (a pipe nobody reads would fill and stall the server).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.pg_server import free_port

STARTUP_TIMEOUT = 60.0


def serve_env(database_url: str, openai_base_url: str, **settings: str) -> dict[str, str]:
    """The environment of a served process: nothing inherited from ours but the basics."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "SLACK_", "DATABASE_"))}
    env.update({"DATABASE_URL": database_url, "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": openai_base_url, "DIALECTIC_CONFIG": os.devnull,
                "DIALECTIC_LOG_LEVEL": "INFO", "DIALECTIC_CACHE_TTL_SECONDS": "0"})
    env.update(settings)
    return env


class ServedProcess:
    def __init__(self, env: dict[str, str], log_path: Path, *, port: int | None = None,
                 cwd: Path | None = None) -> None:
        self.env = env
        self.cwd = cwd   # another tree's `bot` (python -m looks in the working directory first)
        self.log_path = log_path
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "serve", "--port", str(self.port), env=self.env,
                stdout=log, stderr=log, cwd=self.cwd)
        async with asyncio.timeout(STARTUP_TIMEOUT):
            while True:
                if self.process.returncode is not None:
                    raise AssertionError(f"serve exited {self.process.returncode}:\n{self.log()}")
                try:
                    await self.get("/healthz")
                    return
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)

    async def get(self, path: str) -> tuple[int, Any]:
        return await self.call("GET", path)

    async def call(self, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as s, s.request(method, self.base + path, **kw) as r:
            return r.status, await r.json()

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def terminate(self, timeout: float = 60.0) -> int:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
