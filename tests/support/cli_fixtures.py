"""Running `dialectic` in this process, in the environment a new user has: none of our
variables, no settings file, an empty working directory.

    def test_x(cli: Cli) -> None:
        done = cli("run", "Topic", "--json", env={"OPENAI_BASE_URL": ...})
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.main import main

PREFIXES = ("OPENAI_", "DIALECTIC_", "SLACK_", "DATABASE_URL")


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


Cli = Callable[..., Done]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A new user's shell: none of our variables, no settings file, an empty directory."""
    for name in list(os.environ):
        if name.startswith(PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DIALECTIC_CONFIG", os.devnull)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.chdir(tmp_path)
    handlers = logging.getLogger().handlers[:]
    level = logging.getLogger().level
    yield
    logging.getLogger().handlers[:] = handlers   # the CLI configures logging for its process
    logging.getLogger().setLevel(level)


@pytest.fixture
def cli(clean_env: None, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run `dialectic ARGS` in this process: (exit status, stdout, stderr)."""
    def run(*args: str, env: dict[str, str] | None = None) -> Done:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:   # argparse's own usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return Done(code, out, err)
    return run


