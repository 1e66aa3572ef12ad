"""What running the suite on several pytest-xdist workers needs (`make test` does: docs/
benchmarks.md, "Test suite"): each worker's PostgreSQL database, and the groups kept on one worker.

A worker (PYTEST_XDIST_WORKER=gw0, gw1, …) creates a database of its own on the suite's server
(DIALECTIC_TEST_PG_URL's database name + `_gw0_<run>`), points DIALECTIC_TEST_PG_URL at it for its
tests and every process they start, and drops it when it ends. The tests themselves already take
a fresh schema (storage_fixtures) or database (test_workers_pg) each; a database per worker also
keeps one worker's advisory locks (migrations, audit chains: PostgreSQL scopes them to a database)
from waiting on another's. A run without workers (-p no:xdist, -n 0, `make test-fast`) uses the
URL as it is.

Groups (`--dist loadgroup`): every browser test on one worker, where they share its one Chromium
(browser_fixtures.chromium), and the tests that run whole processes under time pressure
(`dialectic serve` killed and restarted, workers racing for leases, a PostgreSQL restart) on one
worker, one at a time, so two of them never starve each other of the machine's cores.
"""

from __future__ import annotations

import asyncio
import os
import re

import pytest
from sqlalchemy.engine import make_url

PG_URL_ENV = "DIALECTIC_TEST_PG_URL"
#: the acceptance tests that start and kill whole processes against deadlines (`-n` runs them one
#: after another on one worker); the browser tests are found by their `chromium` fixture
PROCESS_MODULES = frozenset({
    "test_workers_pg.py", "test_outage_pg.py", "test_slack_delivery_kill.py", "test_memory.py",
    "test_bench_procs.py", "test_mcp_stdio.py", "test_tracing_export.py",
})


#: the suite's URL as the worker found it (its own database is made on that server)
_base: list[str] = []


def _worker() -> str | None:
    return os.environ.get("PYTEST_XDIST_WORKER")


def _worker_database(base: str, worker: str) -> str:
    run = re.sub(r"[^a-z0-9]", "", os.environ.get("PYTEST_XDIST_TESTRUNUID", "").lower())[:8]
    name = make_url(base).database or "dialectic_test"
    return f"{name}_{worker}_{run}" if run else f"{name}_{worker}"


async def _admin(base: str, statement: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine  # only on workers with PostgreSQL
    from sqlalchemy.pool import NullPool

    engine = create_async_engine(base, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.exec_driver_sql(statement)
    finally:
        await engine.dispose()


def configure_worker() -> None:
    """On an xdist worker with a PostgreSQL URL: create its database and point the URL at it."""
    base, worker = os.environ.get(PG_URL_ENV), _worker()
    if not base or not worker:
        return
    name = _worker_database(base, worker)
    asyncio.run(_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(_admin(base, f'CREATE DATABASE "{name}"'))
    _base.append(base)
    os.environ[PG_URL_ENV] = make_url(base).set(database=name).render_as_string(
        hide_password=False)


def unconfigure_worker() -> None:
    """Drop the worker's database (WITH FORCE: a killed process may still hold a connection)."""
    worker = _worker()
    if not _base or not worker:
        return
    base = _base.pop()
    name = _worker_database(base, worker)
    asyncio.run(_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    os.environ[PG_URL_ENV] = base


def group(item: pytest.Item) -> None:
    """Mark `item` for its xdist group, if it belongs to one (see the module's docstring)."""
    if "chromium" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("browser"))
    elif item.path.name in PROCESS_MODULES:
        item.add_marker(pytest.mark.xdist_group("processes"))
