"""Every command reads the setup the same way, as a user configures it: the environment, a `.env`
in the current directory, and `dialectic.toml` from the current directory, else
`$XDG_CONFIG_HOME/dialectic/`, else the file `DIALECTIC_CONFIG` names; each says which under
`--verbose`, `doctor` always; unknown `DIALECTIC_*` names and `OTEL_*` without the extra are one
warning from every command; under `--json` stdout carries the result alone."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.service.tracing import reset_tracing
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

PRESET = """
[presets.arch-review]
mode = "simple"
description = "Architecture decision records"
rounds = 0
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None) -> Iterator[Path]:
    """A user's config folder ($XDG_CONFIG_HOME/dialectic), no DIALECTIC_CONFIG, and a working
    directory elsewhere. The process environment is put back afterwards: the command exports
    a `.env`'s variables into it, as a process that runs one command may."""
    monkeypatch.delenv("DIALECTIC_CONFIG")
    folder = tmp_path / "xdg-config" / "dialectic"
    folder.mkdir(parents=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    saved = dict(os.environ)
    yield folder
    os.environ.clear()
    os.environ.update(saved)


def test_a_preset_in_the_users_config_folder_works_from_any_directory(cli: Cli,
                                                                       home: Path) -> None:
    (home / "dialectic.toml").write_text(PRESET)
    done = cli("run", "Adopt an event bus?", "--preset", "arch-review", "--json", "--verbose")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode"] == "simple"
    assert f"settings file: {home / 'dialectic.toml'} (found)" in done.stderr


def test_the_current_directory_comes_first_then_the_config_folder(cli: Cli, home: Path) -> None:
    (home / "dialectic.toml").write_text(PRESET)
    assert cli("estimate", "Adopt?", "--preset", "arch-review", "--json").returncode == 0
    (home / "dialectic.toml").write_text("daily_budget = 1\n")    # would be an error
    Path("dialectic.toml").write_text(PRESET)
    done = cli("estimate", "Adopt?", "--preset", "arch-review", "--json")
    assert done.returncode == 0, done.stderr


def test_an_unknown_preset_names_the_files_looked_at(cli: Cli, home: Path) -> None:
    done = cli("run", "Adopt?", "--preset", "arch-review")
    assert done.returncode == 2
    said = " ".join((done.stdout + done.stderr).split())
    assert "unknown preset 'arch-review'" in said
    assert str(Path.cwd() / "dialectic.toml") in said
    assert str(home / "dialectic.toml") in said and "DIALECTIC_CONFIG" in said


def test_an_unknown_preset_names_the_file_it_read(cli: Cli, home: Path) -> None:
    (home / "dialectic.toml").write_text("daily_budget_usd = 3\n")
    done = cli("estimate", "Adopt?", "--preset", "arch-review")
    assert done.returncode == 2
    said = " ".join((done.stdout + done.stderr).split())
    assert f"settings file: {home / 'dialectic.toml'}" in said


def test_dialectic_config_names_the_file(cli: Cli, home: Path, tmp_path: Path) -> None:
    named = tmp_path / "team.toml"
    named.write_text(PRESET)
    done = cli("doctor", env={"DIALECTIC_CONFIG": str(named)})
    assert f"settings file: {named} (named by DIALECTIC_CONFIG)" in done.stdout


def test_doctor_says_which_files_it_read(cli: Cli, home: Path) -> None:
    (home / "dialectic.toml").write_text(PRESET)
    Path(".env").write_text("DIALECTIC_DAILY_BUDGET_USD=3\n")
    done = cli("doctor")
    assert f"settings file: {home / 'dialectic.toml'} (found)" in done.stdout
    assert f".env file: {Path.cwd() / '.env'}" in done.stdout


def test_a_dotenv_file_is_read_by_every_command(cli: Cli, home: Path) -> None:
    Path(".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    done = cli("estimate", "Adopt?", "--mode", "simple", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rehearsal"] is False


def test_the_environment_wins_over_dotenv(cli: Cli, home: Path) -> None:
    Path(".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    done = cli("estimate", "Adopt?", "--mode", "simple", "--json", env={"OPENAI_API_KEY": ""})
    assert json.loads(done.stdout)["rehearsal"] is True


@pytest.mark.parametrize("args", [
    ("run", "Adopt?", "--mode", "simple", "--rounds", "0", "--json"),
    ("doctor",),
    ("list",),
    ("presets",),
])
def test_every_command_warns_of_a_misspelt_variable(cli: Cli, args: tuple[str, ...]) -> None:
    done = cli(*args, env={"DIALECTIC_DEFAUL_MODEL": "gpt-4o"})
    assert ("DIALECTIC_DEFAUL_MODEL is not a setting (did you mean 'DIALECTIC_DEFAULT_MODEL'?)"
            in " ".join(done.stderr.split()))
    assert done.stderr.count("DIALECTIC_DEFAUL_MODEL") == 1


def test_tracing_without_the_extra_is_one_line_saying_how_to_install_it(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)   # as if not installed
    done = cli("run", "Adopt?", "--mode", "simple", "--rounds", "0", "--json",
               env={"OTEL_TRACES_EXPORTER": "console"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr
    warning = [line for line in done.stderr.splitlines() if "OTEL_TRACES_EXPORTER" in line]
    assert len(warning) == 1 and "pip install 'dialectic[otel]'" in warning[0]
    assert "make run OTEL=1" in warning[0]
    json.loads(done.stdout)


def test_under_json_stdout_is_the_result_alone_even_with_console_traces(cli: Cli) -> None:
    try:
        done = cli("run", "Adopt?", "--mode", "simple", "--rounds", "0", "--json",
                   env={"OTEL_TRACES_EXPORTER": "console"})
    finally:
        reset_tracing()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"   # one object, nothing before it
    assert '"trace_id"' in done.stderr, "the spans the person asked to see, on stderr"
