"""The SQLite database is private to the service's account (storage/permissions.py): a data
directory `dialectic` creates is 0700 and its database files 0600 (-wal and -shm too), whatever
the umask; files that already exist are left alone, and `doctor` and `serve` warn once when a
group or other users can read them."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.served_process import ServedProcess, serve_env

__all__ = ["clean_env", "cli"]  # fixtures


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The umask many servers run with (022), so a default-created file would be 0644."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_directory_and_database_are_private(cli: Cli, tmp_path: Path,
                                                       open_umask: None) -> None:
    data = tmp_path / "srv" / "dialectic"
    done = cli("db", "upgrade", env={"DIALECTIC_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _mode(data) == 0o700 and _mode(data / "dialectic.db") == 0o600
    sides = [p for p in data.iterdir() if p.name != "dialectic.db"]
    assert all(_mode(p) == 0o600 for p in sides), [(p.name, oct(_mode(p))) for p in sides]
    done = cli("doctor", env={"DIALECTIC_DATA_DIR": str(data)})
    assert "can be read by" not in done.stdout + done.stderr


def test_doctor_names_a_database_others_can_read_and_leaves_it_as_it_is(
        cli: Cli, tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{database}"}
    assert cli("db", "upgrade", env=env).returncode == 0
    database.chmod(0o644)
    done = cli("doctor", env=env)
    said = done.stdout + done.stderr
    assert (f"Warning: {database} can be read by its group and other users (mode 0644); it "
            f"holds every debate and review: chmod 600 {database}") in said, said
    assert said.count("can be read by") == 1
    assert _mode(database) == 0o644   # an operator may share it on purpose: warned, not changed


async def test_serve_creates_private_files_and_warns_once_about_readable_ones(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = serve_env("unused", "http://127.0.0.1:9/v1", DIALECTIC_DATA_DIR=str(data))
    del env["DATABASE_URL"]
    before = os.umask(0o022)
    try:
        server = ServedProcess(env, tmp_path / "serve.log")
        await server.start()
        status, _ = await server.get("/healthz")
        wal = data / "dialectic.db-wal"
        modes = {p.name: _mode(p) for p in data.iterdir()}
        assert await server.terminate() == 0
        assert status in (200, 503) and _mode(data) == 0o700
        assert wal.name in modes and set(modes.values()) == {0o600}, modes
        assert "can be read by" not in server.log()
        (data / "dialectic.db").chmod(0o640)
        again = ServedProcess(env, tmp_path / "again.log")
        await again.start()
        await again.get("/healthz")
        assert await again.terminate() == 0
    finally:
        os.umask(before)
    warned = [line for line in again.log().splitlines() if "can be read by" in line]
    assert len(warned) == 1 and "can be read by its group (mode 0640)" in warned[0], warned
    assert "WARNING" in warned[0]
