"""PostgreSQL stopped and started under a running `dialectic serve`.

While the database is away `/healthz` is 503 and says why, and a submission is a 503 in JSON.
Once it is back the server is healthy again without a restart: the debate that was running when
the database went away resumes from its saved steps, and one submitted after the outage
completes. SIGTERM then stops it gracefully with exit status 0, and no traceback was printed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from storage.records import DebateStatus
from tests.fakes.openai_server import FakeOpenAI
from tests.support.pg_server import own_postgres
from tests.support.served_process import ServedProcess, serve_env

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]
SETTLED = {DebateStatus.COMPLETED.value, DebateStatus.AWAITING_REVIEW.value}


async def _until_health(server: ServedProcess, status: int, timeout: float = 30.0
                        ) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            got, health = await server.get("/healthz")
            if got == status:
                return dict(health)
            await asyncio.sleep(0.1)


async def _submit(server: ServedProcess, topic: str) -> str:
    status, reply = await server.call("POST", "/api/debates",
                                      json={"topic": topic, "mode": "structured"})
    assert status == 202, reply
    return str(reply["id"])


async def _settled(server: ServedProcess, debate_id: str, timeout: float = 60.0
                   ) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            status, record = await server.get(f"/api/debates/{debate_id}")
            if status == 200 and record["status"] in SETTLED | {"failed", "timed_out"}:
                return dict(record)
            await asyncio.sleep(0.2)


async def test_the_server_rides_out_a_postgres_restart(tmp_path: Path) -> None:
    async with own_postgres() as pg, FakeOpenAI(latency=0.3) as fake:
        env = serve_env(pg.url, fake.base_url, DIALECTIC_LEASE_SECONDS="2",
                        DIALECTIC_POLL_INTERVAL="0.1")
        server = ServedProcess(env, tmp_path / "serve.log")
        await server.start()
        try:
            assert (await _until_health(server, 200))["problems"] == []
            running = await _submit(server, "Adopt a service mesh before the outage?")
            async with asyncio.timeout(30):
                while len(fake.requests) < 3:  # its first phase is under way
                    await asyncio.sleep(0.05)
            await pg.stop()
            health = await _until_health(server, 503)
            assert health["ok"] is False
            assert any("check DATABASE_URL" in p for p in health["problems"]), health
            status, refused = await server.call("POST", "/api/debates",
                                                json={"topic": "During the outage?"})
            assert status == 503 and "database" in refused["error"]
            await asyncio.sleep(2.0)  # claims keep failing for a while; nothing may die of it
            await pg.start()
            assert (await _until_health(server, 200))["problems"] == []
            after = await _submit(server, "Adopt a service mesh after the outage?")
            resumed, fresh = await _settled(server, running), await _settled(server, after)
        finally:
            code = await server.terminate()
    log = server.log()
    assert resumed["status"] in SETTLED, (resumed["status"], resumed["error"], log[-3000:])
    assert fresh["status"] in SETTLED, (fresh["status"], fresh["error"], log[-3000:])
    assert resumed["attempts"] >= 2  # reclaimed once its lease ran out: resumed, not redone
    assert code == 0, log[-3000:]
    assert "Traceback" not in log, log[-5000:]
    assert "cannot claim debates" in log and "claims debates again" in log
