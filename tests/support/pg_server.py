"""A PostgreSQL server of a test's own, to stop and start under a running service.

    async with own_postgres() as pg:          # initdb in a temporary directory, a free port
        url = pg.url                          # postgresql+asyncpg://postgres@127.0.0.1:PORT/postgres
        await pg.stop()                       # clients are cut off (pg_ctl stop -m fast)
        await pg.start()

The suite's shared server (scripts/with-postgres.sh) cannot be stopped without failing every other
test; this one belongs to one test. It runs as the `postgres` user when we are root (PostgreSQL
refuses to run as root), like the script does, and is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest


def server_binaries() -> Path | None:
    """The directory holding pg_ctl and initdb, or None when PostgreSQL is not installed."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                            key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit()
                            else 0, reverse=True):
        if os.access(f"{directory}/pg_ctl", os.X_OK) and os.access(f"{directory}/initdb", os.X_OK):
            return Path(directory)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnPostgres:
    """One throwaway PostgreSQL cluster: its data directory, port and pg_ctl."""

    def __init__(self, binaries: Path, root: Path) -> None:
        self.binaries = binaries
        self.root = root
        self.data = root / "db"
        self.port = free_port()
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    async def _run(self, *argv: str) -> None:
        process = await asyncio.create_subprocess_exec(
            *self.as_postgres, *argv, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        out, _ = await process.communicate()
        if process.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {out.decode()[-2000:]}\n{tail}")

    async def init(self) -> None:
        await self._run(str(self.binaries / "initdb"), "-D", str(self.data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8", "--no-sync")

    async def start(self) -> None:
        options = (f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off")
        await self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l",
                        str(self.root / "server.log"), "-w", "-t", "60", "-o", options, "start")

    async def stop(self, mode: str = "fast") -> None:
        """Stop the server; `fast` disconnects every client (as a restart or failover does)."""
        await self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w",
                        "stop")


@asynccontextmanager
async def own_postgres() -> AsyncIterator[OwnPostgres]:
    """A started throwaway server (the test is skipped, saying why, without PostgreSQL)."""
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries: run under scripts/with-postgres.sh "
                    "(make test), which installs them")
    root = Path(tempfile.mkdtemp(prefix="dialectic-own-pg."))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    pg = OwnPostgres(binaries, root)
    try:
        await pg.init()
        await pg.start()
        yield pg
    finally:
        with contextlib.suppress(RuntimeError):  # already stopped
            await pg.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
