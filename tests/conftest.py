"""Shared fixtures: the fake OpenAI server, databases (SQLite and the throwaway PostgreSQL)."""

import os
import tempfile

import pytest

from tests.fakes.fixtures import fake_openai, gateway_settings  # noqa: F401
from tests.storage_fixtures import db, pg_db, sqlite_db  # noqa: F401

#: Tests that run whole stacks (servers, workers, Slack and the scheduler on loopback, other
#: processes); `make test-fast` leaves them, and PostgreSQL, out.
INTEGRATION = frozenset({
    "test_api.py", "test_api_faults.py", "test_cli.py", "test_console_browser.py",
    "test_layers.py", "test_outage_pg.py", "test_scheduler.py", "test_scheduler_briefs.py",
    "test_service.py", "test_slack_e2e.py", "test_slack_faults.py", "test_slack_notifier.py",
    "test_slack_schedules.py", "test_worker_outages.py", "test_workers_pg.py",
})

#: The default database lives in the user's data directory: never the real one in a test run
#: (subprocesses inherit it). `clean_env` gives each CLI test its own.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="dialectic-test-data-")
os.environ.pop("DIALECTIC_DATA_DIR", None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in INTEGRATION:
            item.add_marker(pytest.mark.integration)
