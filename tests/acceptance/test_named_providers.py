"""docs/providers.md's "Several providers at once" block, as written: it loads, routes each model
it names to its provider, and, with its two base URLs pointed at two simulations on loopback (one
OpenAI-like, one Anthropic-compat-like), `dialectic serve` runs its `mixed` preset over the API to
a finished debate whose sides and judges used both, whose recorded cost is the two bills, and
whose keys appear nowhere in the log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import load_settings
from engine.money.prices import quote
from engine.settings import ModelPrice
from tests.acceptance.test_every_variable import TOKEN, _finished
from tests.fakes.openai_server import FakeOpenAI
from tests.support.served_process import ServedProcess, serve_env

pytestmark = pytest.mark.integration   # a whole process with the fakes on loopback

ROOT = Path(__file__).resolve().parents[2]
OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com/v1/"
KEYS = {"OPENAI_API_KEY": "sk-openai-named-secret", "ANTHROPIC_API_KEY": "sk-ant-named-secret"}


def documented_block() -> str:
    section = (ROOT / "docs" / "providers.md").read_text().split(
        "\n## Several providers at once\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    return block


def test_the_documented_block_loads_and_routes_each_model(tmp_path: Path) -> None:
    path = tmp_path / "dialectic.toml"
    path.write_text(documented_block())
    settings = load_settings({"DIALECTIC_CONFIG": str(path), **KEYS}).engine
    assert settings.route(settings.model_for("pro")) == ("openai", "gpt-4o-mini")
    assert settings.route(settings.model_for("con")) == ("claude", "claude-sonnet-4-5")
    judges = {j.name: settings.route(j.model or "") for j in settings.presets["mixed"].judges}
    assert judges == {"engineer": ("openai", "gpt-4o-mini"),
                      "auditor": ("claude", "claude-sonnet-4-5")}
    assert settings.for_provider("claude").provider_kind == "anthropic"
    assert settings.providers["openai"].max_concurrency == 8
    assert set(KEYS.values()) <= set(settings.secrets())


async def test_serve_runs_the_documented_block_on_two_providers_and_records_their_bills(
        tmp_path: Path) -> None:
    async with FakeOpenAI() as gpt, FakeOpenAI(provider="anthropic") as claude, \
            FakeOpenAI() as default:
        config = tmp_path / "dialectic.toml"
        config.write_text(documented_block().replace(OPENAI_URL, gpt.base_url)
                          .replace(ANTHROPIC_URL, claude.base_url))
        database = f"sqlite+aiosqlite:///{tmp_path / 'dialectic.db'}"
        env = serve_env(database, default.base_url, DIALECTIC_CONFIG=str(config),
                        DIALECTIC_API_TOKEN=TOKEN, **KEYS)
        server = ServedProcess(env, tmp_path / "serve.log")
        await server.start()
        try:
            status, body = await server.call(
                "POST", "/api/debates", headers={"Authorization": f"Bearer {TOKEN}"},
                json={"topic": "Should we move billing to PostgreSQL?", "preset": "mixed"})
            assert status == 202, body
            record = await _finished(server, body["id"])
        finally:
            assert await server.terminate() == 0, server.log()
    result = record["result"]
    assert isinstance(result, dict) and result["complete"] is True, result
    assert default.count() == 0, "every model named its provider"
    assert {r.body["model"] for r in gpt.requests} == {"gpt-4o-mini"}
    assert {r.body["model"] for r in claude.requests} == {"claude-sonnet-4-5"}
    assert {r.role for r in gpt.requests} >= {"pro", "judge/engineer"}
    assert {r.role for r in claude.requests} >= {"con", "judge/auditor"}
    rate = quote("gpt-4o-mini", configured={}, base_url=None,
                 default=ModelPrice(input=0, output=0)).price   # OpenAI's, from genai-prices
    bills = (gpt.bill_usd(input=rate.input, output=rate.output, cached_input=rate.cached_input)
             + claude.bill_usd(input=3.0, output=15.0))
    assert result["cost"]["usd"] == pytest.approx(bills, abs=2e-6)
    assert result["cost"]["calls"] == gpt.answered() + claude.answered()
    assert not any(key in server.log() for key in KEYS.values())
