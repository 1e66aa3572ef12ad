"""What a `dialectic run` process imports, read from `python -X importtime` of the whole process as
a person starts it (never its time): `run --help` loads the grammar alone; a run against the fake
provider loads the SDK and the debate, and none of the service (Alembic, Slack, the HTTP server
and its templates, the scheduler, metrics, OpenTelemetry, the charts) but its database (a run is a
stored debate; Alembic only to migrate, before the first run; on SQLite, not PostgreSQL's dialect
nor the tables a debate never touches), but not the statistics (numpy,
krippendorff) unless its mode computes them (consensus): the service's oversight loads them only
for its reports; a rehearsal not even the `openai` SDK. A run loads the protocol of its own mode
and no other's, no cron library (it has no schedule), and with `--json` not the terminal library
(rich); a run in the terminal does load rich.

`-X importtime` does not report a module imported by `importlib.import_module` itself (the
protocol of the mode, bot.processes), only what that module imports by statement."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest

from engine.money.prices import Provider, library_price
from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import PREFIXES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "Should a startup adopt microservices from day one?"
#: Never part of a `run`: the service's machinery, its surfaces and its optional extras; and,
#: with the database at the latest migration, not Alembic either.
SERVICE = ("alembic", "asyncpg", "slack_sdk", "slack_bolt",
           "apscheduler", "jinja2", "prometheus_client", "opentelemetry", "matplotlib",
           "aiohttp.web", "bot.assembly",
           "bot.http.server", "bot.slack.app", "bot.scheduling.scheduler", "bot.cli.eval_report",
           "mcp", "bot.mcp")
#: Part of every `run`: a terminal run is a stored debate, admitted, held and charged in the
#: database like any other (docs/money.md).
DATABASE = ("sqlalchemy", "aiosqlite", "storage.db", "storage.models", "storage.queue",
            "bot.service.debates")
#: Never part of a run on SQLite (the default database): PostgreSQL's dialect and its drivers; the
#: tables a debate's path never touches, mapped only by the processes that use them
#: (storage/schema.py), the outbox's among them while no Slack is configured (nothing is owed:
#: bot/service/delivery.py) and the workspaces' (a terminal debate has none); and the homoglyph
#: table while every text is ASCII or common typography (curly quotes, dashes:
#: engine/untrusted/glyphs.py), as the topic and the replies here are.
UNUSED = ("sqlalchemy.dialects.postgresql", "storage.schema", "storage.schedule_rows",
          "storage.slack_rows", "storage.service_rows", "storage.evaluation_rows",
          "storage.installations", "confusable_homoglyphs", "storage.outbox",
          "storage.outbox_rows", "storage.workspace_rows")
#: Only for a debate whose panel computes alpha and kappa (engine/reading/verdicts.py).
STATISTICS = ("numpy", "krippendorff", "engine.reading.agreement", "engine.reading.verdicts")
#: Only for a debate against a provider.
SDK = ("openai", "engine.provider.gateway")
#: Only for a rehearsal (no provider configured).
REHEARSAL = ("engine.provider.rehearsal",)
#: Only once a command is parsed.
COMMAND = ("pydantic", "pydantic_settings", "rich", "bot.settings", "bot.processes")
#: Only where a schedule's calendar is walked (the scheduler, `schedule` commands), never a run.
CRON = ("croniter", "dateutil")
#: Only to show a command's output in the terminal, never a `--json` run's.
TERMINAL = ("rich", "bot.cli.progress", "bot.cli.outcomes")
#: What each mode's protocol imports of the other modes' protocols (consensus judges as
#: structured does); none of the rest is loaded by a run of that mode.
SHARED = {"consensus": ("structured",)}
MODES = ("simple", "structured", "consensus", "panel", "critique", "redteam")


def other_protocols(mode: str) -> tuple[str, ...]:
    return tuple(f"engine.protocols.{m}" for m in MODES
                 if m != mode and m not in SHARED.get(mode, ()))
_LINE = re.compile(r"^import time:\s+-?\d+ \|\s+-?\d+ \|\s*(\S+)$")  # threads: self < 0


async def _imports(tmp_path: Path, *args: str, base_url: str | None = None
                   ) -> tuple[int, str, set[str]]:
    """`python -X importtime -m bot ARGS` in a new user's environment whose database is made
    (`db upgrade`, as the first run would): exit status, stdout and every module the process
    imported."""
    if args[:1] == ("run",) and args[-1:] != ("--help",):
        code, _, _ = await _imports(tmp_path, "db", "upgrade")
        assert code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env.update(DIALECTIC_CONFIG=os.devnull, XDG_DATA_HOME=str(tmp_path / "xdg"),
               PYTHONPATH=str(ROOT))
    if base_url is not None:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=base_url)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "bot", *args, env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    found = {m.group(1) for line in err.decode().splitlines() if (m := _LINE.match(line))}
    assert found, err.decode()[-2000:]   # importtime did report: an empty set proves nothing
    return process.returncode or 0, out.decode(), found


def _of(modules: set[str], names: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(m == n or m.startswith(n + ".") for m in modules)}


async def test_run_help_loads_the_grammar_alone(tmp_path: Path) -> None:
    code, out, modules = await _imports(tmp_path, "run", "--help")
    assert code == 0 and "--mode" in out
    assert "bot.cli.parser" in modules
    assert _of(modules, SERVICE + STATISTICS + SDK + COMMAND + UNUSED) == set()


@pytest.mark.parametrize("mode", ["critique", "simple", "structured", "panel", "redteam"])
async def test_a_run_loads_the_sdk_and_its_database_but_no_other_service(
        tmp_path: Path, mode: str) -> None:
    async with FakeOpenAI() as fake:
        code, out, modules = await _imports(tmp_path, "run", TOPIC, "--mode", mode, "--json",
                                            base_url=fake.base_url)
        assert fake.requests   # the debate did call the provider
    assert code == 0 and json.loads(out)["status"] == "completed"
    assert _of(modules, SDK + DATABASE) == set(SDK + DATABASE)
    assert _of(modules, SERVICE + STATISTICS + CRON + TERMINAL + REHEARSAL + UNUSED
               + other_protocols(mode)) == set()


async def test_a_consensus_run_loads_the_statistics_and_still_no_service(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        code, out, modules = await _imports(tmp_path, "run", TOPIC, "--mode", "consensus",
                                            "--json", base_url=fake.base_url)
    result = json.loads(out)
    assert code == 0 and result["status"] == "completed"
    assert result["consensus"]["alpha"] is not None   # the panel's statistics were computed
    assert _of(modules, SDK + STATISTICS + DATABASE) == set(SDK + STATISTICS + DATABASE)
    assert _of(modules, SERVICE + CRON + TERMINAL + REHEARSAL + UNUSED
               + other_protocols("consensus")) == set()
    assert "engine.protocols.structured" in modules   # imported by the consensus protocol


async def test_a_run_in_the_terminal_loads_rich_and_still_no_cron(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        code, out, modules = await _imports(tmp_path, "run", TOPIC, "--mode", "simple",
                                            base_url=fake.base_url)
    assert code == 0 and "Verdict" in out, out[-2000:]
    assert _of(modules, TERMINAL) == set(TERMINAL)
    assert _of(modules, SERVICE + CRON + UNUSED + other_protocols("simple")) == set()


async def test_a_rehearsal_loads_no_provider_sdk(tmp_path: Path) -> None:
    code, out, modules = await _imports(tmp_path, "run", TOPIC, "--mode", "structured", "--json")
    assert code == 0 and json.loads(out)["rehearsal"] is True
    assert _of(modules, REHEARSAL) == set(REHEARSAL)
    assert _of(modules, SERVICE + SDK + CRON + TERMINAL + UNUSED
               + other_protocols("structured")) == set()


async def test_a_second_run_of_the_day_prices_without_the_library(tmp_path: Path) -> None:
    """The first run asks genai-prices and keeps its answers for the day in the data directory
    (engine/money/price_memo.py); the next prices the same models from that file."""
    async with FakeOpenAI() as fake:
        first = await _imports(tmp_path, "run", TOPIC, "--mode", "simple", "--json",
                               base_url=fake.base_url)
        second = await _imports(tmp_path, "run", TOPIC, "--mode", "simple", "--json",
                                base_url=fake.base_url)
    assert first[0] == second[0] == 0
    for _, out, _ in (first, second):   # each priced at the library's rates
        (model, used), = json.loads(out)["cost"]["by_model"].items()
        rate = library_price(model, Provider())
        assert rate is not None
        billed = (used["prompt_tokens"] - used["cached_tokens"]) * rate[1].input + (
            used["cached_tokens"] * (rate[1].cached_input or rate[1].input)
        ) + used["completion_tokens"] * rate[1].output
        assert used["usd"] == pytest.approx(billed / 1e6, rel=1e-6)
    assert "genai_prices" in first[2] and "genai_prices" not in second[2]
