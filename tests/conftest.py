"""What every test shares: a throwaway data directory, the markers each folder gives its tests
(tests/unit, tests/integration, tests/acceptance: see tests/__init__.py), and what running on
pytest-xdist workers needs (tests/support/parallel.py: a database per worker, the groups)."""

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import parallel

TESTS = Path(__file__).resolve().parent

#: The folder a test lives in decides its markers: `integration` for everything that does real
#: I/O (tests/integration and tests/acceptance; `make test-fast` runs tests/unit alone), and
#: `acceptance` for whole processes and the browser.
MARKS = {"integration": ("integration",), "acceptance": ("integration", "acceptance")}

#: The default database lives in the user's data directory: never the real one in a test run
#: (subprocesses inherit it). `clean_env` gives each CLI test its own.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="dialectic-test-data-")
os.environ.pop("DIALECTIC_DATA_DIR", None)
#: Nor the user's settings file (~/.config/dialectic/dialectic.toml is read by every command).
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="dialectic-test-config-")


def pytest_configure(config: pytest.Config) -> None:
    parallel.configure_worker()


def pytest_unconfigure(config: pytest.Config) -> None:
    storage = sys.modules.get("tests.support.storage_fixtures")  # loaded by tests that use it
    if storage is not None:
        storage.drop_templates()  # its migrated template databases
    parallel.unconfigure_worker()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return parallel.scheduler(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = item.path.resolve().relative_to(TESTS).parts[0]
        for mark in MARKS.get(folder, ()):
            item.add_marker(getattr(pytest.mark, mark))
        parallel.check_group(item)
