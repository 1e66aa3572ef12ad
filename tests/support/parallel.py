"""What running the suite on several pytest-xdist workers needs (`make test` does: docs/
benchmarks.md, "Test suite"): each worker's PostgreSQL database, and the groups kept on one worker.

A worker (PYTEST_XDIST_WORKER=gw0, gw1, …) creates a database of its own on the suite's server
(DIALECTIC_TEST_PG_URL's database name + `_gw0_<run>`), points DIALECTIC_TEST_PG_URL at it for its
tests and every process they start, and drops it when it ends. The tests themselves already take
a fresh schema (storage_fixtures) or database (test_workers_pg) each; a database per worker also
keeps one worker's advisory locks (migrations, audit chains: PostgreSQL scopes them to a database)
from waiting on another's. A run without workers (-p no:xdist, -n 0, `make test-fast`) uses the
URL as it is.

Groups, for `--dist loadgroup` only: every browser test on one worker, where they share its
Chromium, and the tests that run whole processes under time pressure on one worker, one at a
time. `GROUPS` names their modules and `Grouped` is xdist's loadgroup scheduler told a test's
group by its module (pytest 9.2 keeps a node's id where pytest-xdist 3.8's `xdist_group` mark
cannot append the group to it, so the mark alone groups nothing). `make test` does NOT use it: it
runs `--dist load`, because xdist's scope schedulers (loadgroup, loadscope, loadfile) key tests
by node id, and schemathesis gives the 38 cases of test_properties_http one id, so they would run
once instead of 38 times. `check_group` fails a run, saying so, when a test with the `chromium`
fixture is in no group.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

import pytest
from sqlalchemy.engine import make_url

PG_URL_ENV = "DIALECTIC_TEST_PG_URL"
#: test module (in tests/acceptance) -> the group whose tests run one after another on one worker
GROUPS = {
    **dict.fromkeys(("test_charts_browser.py", "test_console_browser.py",
                     "test_evaluations_browser.py", "test_http_hardening_browser.py",
                     "test_preset_browser.py", "test_waterfall_browser.py"), "browser"),
    **dict.fromkeys(("test_workers_pg.py", "test_outage_pg.py", "test_slack_delivery_kill.py",
                     "test_memory.py", "test_mcp_stdio.py", "test_tracing_export.py"),
                    "processes"),
}


#: the suite's URL as the worker found it (its own database is made on that server)
_base: list[str] = []


def _worker() -> str | None:
    return os.environ.get("PYTEST_XDIST_WORKER")


def _worker_database(base: str, worker: str) -> str:
    run = re.sub(r"[^a-z0-9]", "", os.environ.get("PYTEST_XDIST_TESTRUNUID", "").lower())[:8]
    name = make_url(base).database or "dialectic_test"
    return f"{name}_{worker}_{run}" if run else f"{name}_{worker}"


def configure_worker() -> None:
    """On an xdist worker with a PostgreSQL URL: create its database and point the URL at it."""
    base, worker = os.environ.get(PG_URL_ENV), _worker()
    if not base or not worker:
        return
    from tests.support.storage_fixtures import admin_sql  # only on workers with PostgreSQL

    name = _worker_database(base, worker)
    asyncio.run(admin_sql(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(admin_sql(base, f'CREATE DATABASE "{name}"'))
    _base.append(base)
    os.environ[PG_URL_ENV] = make_url(base).set(database=name).render_as_string(
        hide_password=False)


def unconfigure_worker() -> None:
    """Drop the worker's database (WITH FORCE: a killed process may still hold a connection)."""
    worker = _worker()
    if not _base or not worker:
        return
    base = _base.pop()
    from tests.support.storage_fixtures import admin_sql

    name = _worker_database(base, worker)
    asyncio.run(admin_sql(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    os.environ[PG_URL_ENV] = base


def check_group(item: pytest.Item) -> None:
    """A browser test outside the browser group would start another Chromium on another
    worker, beside the first: refuse the run, saying which module to list."""
    if "chromium" in getattr(item, "fixturenames", ()) and GROUPS.get(item.path.name) != "browser":
        raise pytest.UsageError(f"{item.path.name} uses the chromium fixture: list it in "
                                "tests/support/parallel.py GROUPS as a browser module")


def scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`'s scheduler, told each test's group by its module (None otherwise)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            return GROUPS.get(module) or super()._split_scope(nodeid)

    return Grouped(config, log)
