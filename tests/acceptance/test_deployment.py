"""The deployment files agree with the code and the docs: .env.example names only settings,
every variable of docs/configuration.md's operator table and, where it leaves a line commented, the
value the container really uses; the Dockerfile's health check follows DIALECTIC_PORT (run
against a real `dialectic serve`) and the SQLite data lives in a volume; compose.yml publishes
the configured port; `make run` installs the runtime alone and a later `make test` adds the
development tools."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.settings import FIELD_OF_ENV, SECTION_OF, load_settings
from tests.support.pg_server import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIGURATION = (DOCS / "configuration.md").read_text()
TRACING = (DOCS / "tracing.md").read_text()
#: every guide and the README, where a variable may be explained in words
GUIDES = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))])
ENV_EXAMPLE = (ROOT / ".env.example").read_text()
DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((ROOT / "compose.yml").read_text())
ASSIGNMENT = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")
TOKEN = "a-long-random-token-for-the-deployment-tests"
STARTUP = 60.0   # how long `dialectic serve` may take to become healthy (a bound, not a figure)


def example_assignments() -> list[tuple[str, str, bool]]:
    """(variable, value, commented) for each `VAR=value` line of .env.example."""
    found = []
    for line in ENV_EXAMPLE.splitlines():
        match = ASSIGNMENT.match(line.strip())
        if match:
            found.append((match[2], match[3], match[1] is not None))
    return found


def configuration_variables() -> set[str]:
    """Every variable of docs/configuration.md's operator table (generated from the settings
    models); a `_SUFFIX` after a full name in one cell is read as that name's prefix + suffix."""
    section = CONFIGURATION.split("\n## Variables an operator sets\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        cell = re.findall(r"`([A-Z_]+)`", row.split("|")[1])
        prefix = cell[0].split("_")[0]
        names.update(prefix + name if name.startswith("_") else name for name in cell)
    return names


def tracing_variables() -> set[str]:
    """Every variable docs/tracing.md's table lists (`OTEL_BSP_*` as written: a family)."""
    section = TRACING.split("\n## Turning it on\n", 1)[1].split("\n**One trace", 1)[0]
    return {name for row in section.splitlines() if row.startswith("| `")
            for name in re.findall(r"`(OTEL_[A-Z_]+\*?)`", row.split("|")[1])}


def dockerfile_instructions(keyword: str) -> list[str]:
    """The arguments of each `keyword` instruction, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines()
            if line.split(None, 1)[:1] == [keyword]]


def image_environment() -> dict[str, str]:
    """The ENV the image sets (`ENV A=1 B=2` form)."""
    env: dict[str, str] = {}
    for args in dockerfile_instructions("ENV"):
        env.update(pair.split("=", 1) for pair in args.split())
    return env


def field_value(environ: dict[str, str], variable: str) -> Any:
    field = FIELD_OF_ENV[variable]
    settings = load_settings({**environ, "DIALECTIC_CONFIG": os.devnull})
    return getattr(getattr(settings, SECTION_OF[field]), field)


# --------------------------------------------------------------------------------------------
# .env.example


def test_env_example_names_only_settings_the_code_reads() -> None:
    names = [name for name, _, _ in example_assignments()]
    assert len(names) >= 20
    assert sorted(set(names) - set(FIELD_OF_ENV)) == []
    assert len(names) == len(set(names)), "a variable appears twice"


def test_every_variable_of_the_configuration_table_is_in_env_example() -> None:
    listed = configuration_variables()
    assert {"OPENAI_API_KEY", "DIALECTIC_PHASE_TIMEOUT", "SLACK_CLIENT_SECRET",
            "DIALECTIC_ALLOWED_HOSTS"} <= listed  # the table is read whole
    in_example = {name for name, _, _ in example_assignments()}
    assert sorted(listed - in_example) == []


def test_every_variable_in_env_example_is_documented() -> None:
    documented = configuration_variables()
    for name, _, _ in example_assignments():
        assert name in documented or f"`{name}`" in GUIDES, name


def test_env_example_loads_as_it_stands() -> None:
    environ = {**image_environment(),
               **{name: value for name, value, commented in example_assignments()
                  if not commented}}
    settings = load_settings({**environ, "DIALECTIC_CONFIG": os.devnull})
    assert settings.service.api_token is not None
    assert settings.slack.slack_client_id is None     # empty is unset, not ""
    assert settings.http.allowed_hosts == ()


@pytest.mark.parametrize("name,value", [(n, v) for n, v, commented in example_assignments()
                                        if commented])
def test_a_commented_line_shows_the_value_the_container_uses(name: str, value: str) -> None:
    """Uncommenting a line changes nothing: it shows the settings' default or the image's."""
    environ = {**image_environment(), "DIALECTIC_API_TOKEN": TOKEN}
    assert field_value({**environ, name: value}, name) == field_value(environ, name)


# --------------------------------------------------------------------------------------------
# Dockerfile and compose.yml


def healthcheck_argv() -> list[str]:
    (check,) = dockerfile_instructions("HEALTHCHECK")
    argv = json.loads(check.split(" CMD ", 1)[1])
    assert isinstance(argv, list) and argv[0] == "python"
    return [sys.executable, *argv[1:]]


def test_the_healthcheck_reads_the_port_variable() -> None:
    (check,) = dockerfile_instructions("HEALTHCHECK")
    assert "DIALECTIC_PORT" in check and "3000" not in check.replace("'3000')", "")


def test_the_sqlite_database_lives_in_a_volume() -> None:
    volumes = [path for args in dockerfile_instructions("VOLUME") for path in json.loads(args)]
    storage = load_settings({**image_environment(), "DIALECTIC_CONFIG": os.devnull}).storage
    database = storage.sqlite_file()
    assert database is not None and storage.is_default_database
    url = storage.database_url
    assert any(database.parent == Path(volume) for volume in volumes), (url, volumes)
    assert f"mkdir -p {database.parent}" in DOCKERFILE  # made (owned by the user) before VOLUME
    assert DOCKERFILE.index(f"mkdir -p {database.parent}") < DOCKERFILE.index("VOLUME")


def _installed_with(extras: str | None) -> list[str]:
    """What the image's `pip install` line installs with `--build-arg EXTRAS=...` (None: the
    argument not given), run by sh as Docker runs it, `pip` standing in to print its operands."""
    (install,) = [a for a in dockerfile_instructions("RUN") if a.startswith("pip install")]
    (default,) = [a for a in dockerfile_instructions("ARG") if a.startswith("EXTRAS")]
    value = json.loads(default.split("=", 1)[1]) if extras is None else extras
    script = f'pip() {{ for a in "$@"; do echo "$a"; done; }}; {install}'
    done = subprocess.run(["sh", "-c", script], env={"EXTRAS": value, "PATH": os.defpath},
                          capture_output=True, text=True, check=True)
    return [a for a in done.stdout.splitlines() if not a.startswith("-")][1:]


def test_the_image_installs_an_extra_when_asked() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert _installed_with(None) == ["."]                 # no OpenTelemetry by default
    assert _installed_with("otel") == [".[otel]"] and "otel" in extras
    assert _installed_with("otel,dev") == [".[otel,dev]"]
    assert "--build-arg EXTRAS=otel" in GUIDES


def test_compose_publishes_the_configured_port_and_uses_postgres() -> None:
    server = COMPOSE["services"]["server"]
    assert server["ports"] == ["${DIALECTIC_PORT:-3000}:${DIALECTIC_PORT:-3000}"]
    shared = COMPOSE["x-dialectic"]
    assert shared["env_file"] == ".env"
    assert shared["environment"]["DATABASE_URL"].startswith("postgresql+asyncpg://")


async def _health(env: dict[str, str]) -> int:
    process = await asyncio.create_subprocess_exec(
        *healthcheck_argv(), env=env, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    return await process.wait()


@pytest.mark.integration
async def test_the_healthcheck_follows_dialectic_port_on_a_real_server(tmp_path: Path) -> None:
    port = free_port()
    basics = {k: v for k, v in os.environ.items()
              if not k.startswith(("OPENAI_", "DIALECTIC_", "SLACK_", "DATABASE_"))}
    image = {**image_environment(), "DIALECTIC_PORT": str(port)}   # `docker run -e` does this
    env = {**basics, **image, "DIALECTIC_API_TOKEN": TOKEN, "DIALECTIC_CONFIG": os.devnull,
           "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/dialectic.db"}
    with (tmp_path / "serve.log").open("wb") as log:
        server = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, stdout=log, stderr=log)
    try:
        async with asyncio.timeout(STARTUP):
            while await _health({**basics, **image}) != 0:
                assert server.returncode is None, (tmp_path / "serve.log").read_text()
                await asyncio.sleep(0.2)
        elsewhere = {**basics, **image, "DIALECTIC_PORT": str(free_port())}
        assert await _health(elsewhere) != 0      # nothing listens there: unhealthy
    finally:
        server.terminate()
        await server.wait()


# --------------------------------------------------------------------------------------------
# Makefile


def make_dry_run(target: str, venv: Path) -> str:
    return subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_run_installs_the_runtime_alone_and_make_test_upgrades(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    fresh = make_dry_run("run", venv)
    assert "-m venv" in fresh and "pip install -q -e .\n" in fresh and "[dev]" not in fresh
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".runtime-stamp").touch()            # what `make run` left behind
    assert "pip install" not in make_dry_run("run", venv)
    for target in ("test", "lint", "bench", "test-fast"):
        assert "pip install -q -e '.[dev,otel]'" in make_dry_run(target, venv), target
    (venv / ".dev-stamp").touch()                # what `make test` leaves behind
    for target in ("run", "test", "lint"):
        assert "pip install -q -e" not in make_dry_run(target, venv), target


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_install_and_run_compile_our_modules(tmp_path: Path) -> None:
    """An editable install leaves engine, storage and bot uncompiled, and PYTHONDONTWRITEBYTECODE
    (containers, CI) stops Python writing their .pyc: `make install` and `make run` compile them,
    every time (compileall redoes only what changed), as pip does for an installed wheel."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".runtime-stamp").touch()
    (venv / ".dev-stamp").touch()
    for target in ("install", "run", "test", "bench"):
        commands = make_dry_run(target, venv)
        assert re.search(r"-m compileall .*\bengine storage bot\b", commands), target
