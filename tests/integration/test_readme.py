"""README.md and the guides in docs/ cannot drift: every toml example loads as a real settings
file, and every shell example runs as written against the real thing (the CLI in process, curl's
requests against a served app, `make` targets in the Makefile, exported variables that are
settings). The generated references (docs/cli.md, docs/api.md, docs/configuration.md) are
checked by tests/integration/test_docs_reference.py instead."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.settings import ENV_NAMES, NOT_SETTINGS, load_settings
from storage.db import Database
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings

__all__ = ["clean_env", "cli"]  # fixtures

ROOT = Path(__file__).resolve().parents[2]
#: the generated references: their examples are `--help` texts, not commands to run
GENERATED = frozenset({"cli.md", "api.md", "configuration.md"})
GUIDES = [ROOT / "README.md", *(path for path in sorted((ROOT / "docs").glob("*.md"))
                                if path.name not in GENERATED)]
#: README first: its `curl -d` example is the debate the later examples name
TEXT = "\n".join(path.read_text() for path in GUIDES)
PLACEHOLDER_ID = "4f1c…"          # the README's example debate id
DEBATE_ID = "DEBATE-ID"           # stands for it until a real debate exists
TOPIC = "Should we keep the monolith?"   # stands for the README's "…" topics


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, re.S)


def commands() -> Iterator[str]:
    """Each shell command of the README and the guides: continuations joined, comments and
    prompts dropped."""
    for block in blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                yield line.removesuffix("&").strip()


def argv(command: str) -> list[str]:
    """The command's words as the shell would give them (`$(cat file)` becomes text)."""
    command = re.sub(r'"\$\(cat [^)]*\)"', '"Policy: no customer data leaves the EU."', command)
    return shlex.split(command.replace(PLACEHOLDER_ID, DEBATE_ID).replace("…", TOPIC))


def test_the_readme_and_guides_have_examples() -> None:
    assert len(blocks("toml")) >= 1 and len(list(commands())) >= 30
    assert any(p.name == "README.md" for p in GUIDES) and len(GUIDES) >= 10


@pytest.mark.parametrize("index", range(len(blocks("toml"))))
def test_every_toml_example_loads_as_a_settings_file(index: int, tmp_path: Path) -> None:
    (tmp_path / "dialectic.toml").write_text(blocks("toml")[index])
    # a named provider's key comes from the variable it names, as an operator exports it
    providers = tomllib.loads(blocks("toml")[index]).get("providers", {})
    keys = {spec["api_key_env"]: "sk-example" for spec in providers.values()
            if "api_key_env" in spec}
    settings = load_settings({"DIALECTIC_CONFIG": str(tmp_path / "dialectic.toml"), **keys})
    assert (settings.engine.providers or settings.engine.presets
            or settings.scheduling.schedules or settings.engine.models or settings.engine.prices)


@pytest.mark.parametrize("index", [i for i, b in enumerate(blocks("toml")) if "[prices." in b])
def test_the_readme_prices_override_the_library(index: int, tmp_path: Path) -> None:
    (tmp_path / "dialectic.toml").write_text(blocks("toml")[index])
    engine = load_settings({"DIALECTIC_CONFIG": str(tmp_path / "dialectic.toml"),
                            "OPENAI_API_KEY": "sk-test"}).engine
    written = tomllib.loads(blocks("toml")[index])["prices"]
    for model, rates in written.items():
        quote = engine.price_quote(model)
        assert quote.source == "configured" and quote.price.model_dump(exclude_none=True) == rates


def test_every_variable_the_readme_names_is_a_setting() -> None:
    named = set(re.findall(r"\b((?:DIALECTIC|OPENAI|SLACK)_[A-Z_]*[A-Z]|DATABASE_URL)\b", TEXT))
    known = {env for names in ENV_NAMES.values() for env in names} | NOT_SETTINGS
    assert sorted(named - known) == []


def test_every_make_target_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = {words[1] for words in map(argv, commands()) if words[0] == "make"}
    assert targets and all(re.search(rf"^{t}:", makefile, re.M) for t in targets)


def test_every_export_names_a_setting() -> None:
    known = {env for names in ENV_NAMES.values() for env in names}
    exported = [argv(c)[1].split("=", 1)[0] for c in commands() if c.startswith("export ")]
    assert exported and set(exported) <= known


#: commands that need a provider to talk to: run against the fake one by their own tests
#: (`doctor`: tests/integration/test_doctor.py runs the README's example and compares its output)
NEEDS_A_PROVIDER = frozenset({"doctor"})


def _cli_commands() -> list[list[str]]:
    found = []
    for command in commands():
        words = argv(command)
        if words[0] in ("dialectic", ".venv/bin/dialectic") and words[1] not in NEEDS_A_PROVIDER:
            found.append(words[1:])
    return found


def test_every_dialectic_command_runs(cli: Cli, tmp_path: Path) -> None:
    """All of them, in order, on one rehearsal database, the placeholder id being a real debate
    the README's own `dialectic run`-equivalent made (curl made it in the README)."""
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/readme.db",
           "DIALECTIC_POLL_INTERVAL": "0.05"}
    seeded = asyncio.run(_seed(env["DATABASE_URL"]))
    ran = []
    for words in _cli_commands():
        words = [seeded if w == DEBATE_ID else w for w in words]
        done = cli(*words, env=env)
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        ran.append(words[0])
    assert {"run", "estimate", "replay", "audit"} <= set(ran)


async def _seed(url: str) -> str:
    """One finished debate in the README's database, for the commands that name one."""
    db = Database(url)
    await db.upgrade()
    try:
        async with served(db, rehearsal_settings(database_url=url)) as (base, rt, _):
            async with aiohttp.ClientSession() as http:
                body = {"topic": "Should a startup adopt microservices from day one?",
                        "mode": "simple", "no_cache": True}
                async with http.post(f"{base}/api/debates", json=body) as reply:
                    debate_id = str((await reply.json())["id"])
                async with asyncio.timeout(30):
                    while (await rt.service.get(debate_id)).result is None:
                        await asyncio.sleep(0.05)
        return debate_id
    finally:
        await db.dispose()


def _curl(words: list[str]) -> tuple[str, str, dict[str, str], str | None]:
    """(method, path, headers, body) of a curl command line."""
    headers: dict[str, str] = {}
    body = None
    url = ""
    rest = iter(words[1:])
    for word in rest:
        if word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(rest)
        elif not word.startswith("-"):
            url = word
    path = "/" + url.split("/", 1)[1] if "/" in url else "/"
    return ("POST" if body is not None else "GET"), path, headers, body


async def test_every_curl_example_is_answered_with_success(db: Database) -> None:
    examples = [argv(c) for c in commands() if c.startswith("curl ")]
    assert examples
    async with served(db, rehearsal_settings()) as (base, rt, _), \
            aiohttp.ClientSession() as http:
        debate_id = await _first_post(http, base, examples)
        async with asyncio.timeout(30):
            while (await rt.service.get(debate_id)).result is None:
                await asyncio.sleep(0.05)
        for words in examples:
            method, path, headers, body = _curl(words)
            path = path.replace(DEBATE_ID, debate_id)
            async with http.request(method, base + path, headers=headers, data=body,
                                    timeout=aiohttp.ClientTimeout(total=30)) as reply:
                assert 200 <= reply.status < 300, (words, reply.status, await reply.text())
                if reply.content_type == "text/event-stream":
                    await reply.content.read()


async def _first_post(http: aiohttp.ClientSession, base: str, examples: list[list[str]]) -> str:
    method, path, headers, body = _curl(next(w for w in examples if "-d" in w))
    async with http.request(method, base + path, headers=headers, data=body) as reply:
        data: dict[str, Any] = json.loads(await reply.text())
        assert reply.status == 202, data
        return str(data["id"])


def test_the_env_example_for_compose_holds_settings_that_load() -> None:
    values: dict[str, str] = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    known = {env for names in ENV_NAMES.values() for env in names}
    assert values and set(values) <= known
    settings = load_settings({**values, "DIALECTIC_CONFIG": "/dev/null"})  # empties as compose
    assert settings.service.api_token is not None
    assert settings.engine.is_rehearsal and not settings.slack.enabled   # blanks mean unset
    assert "env_file: .env" in (ROOT / "compose.yml").read_text()
