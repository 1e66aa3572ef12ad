"""docs/providers.md's tested settings per provider, run as written: each row's variables, the
endpoint pointed at the suite's simulation of that provider, then `dialectic doctor` and one debate
in the terminal. No 400 may be left unanswered and every debate must complete."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text()
SECTION = GUIDE.split("## Models and providers", 1)[1].split("\n## ", 1)[0]
TOPIC = "Should we move billing to PostgreSQL?"
#: each row's provider as the suite simulates it (tests/fakes/provider_kinds.py)
SIMULATED: dict[str, dict[str, object]] = {
    "OpenAI": {}, "OpenAI reasoning models": {},
    "Azure OpenAI": {"provider": "azure", "deployments": {"dialectic-prod": "gpt-4o-mini"}},
    "Anthropic": {"provider": "anthropic"}, "Gemini": {"provider": "gemini"},
    "DeepSeek": {"provider": "deepseek"}, "OpenRouter, LiteLLM proxy": {"provider": "gateway"},
    "Ollama, vLLM, llama.cpp server": {"provider": "ollama"},
}


def rows() -> dict[str, dict[str, str]]:
    """provider -> the variables its row sets, as written."""
    table = SECTION.split("| provider | settings |", 1)[1]
    found: dict[str, dict[str, str]] = {}
    for line in table.strip().splitlines()[1:]:
        if not line.startswith("|"):
            break
        provider, settings = (cell.strip() for cell in line.strip("|").split("|", 1))
        found[provider] = dict(re.findall(r"`([A-Z_]+)=([^`]*)`", settings))
    return found


def test_the_guide_lists_each_provider() -> None:
    assert set(rows()) == set(SIMULATED)


def environment(provider: str, base_url: str) -> dict[str, str]:
    """The row's variables with its placeholders filled: the fake's address with the row's own
    path (Azure's `/openai/v1/`), a key where the row asks for one."""
    env = {k: v for k, v in rows()[provider].items() if v and "…" not in v}
    fake = urlsplit(base_url)
    written = env.get("OPENAI_BASE_URL")
    path = urlsplit(written).path if written else "/v1"
    env["OPENAI_BASE_URL"] = f"{fake.scheme}://{fake.netloc}{path or '/v1'}"
    if "OPENAI_API_KEY" in rows()[provider]:
        env["OPENAI_API_KEY"] = "sk-test-provider-key"
    env.setdefault("DIALECTIC_DEFAULT_MODEL", "gpt-5-mini")
    if env["DIALECTIC_DEFAULT_MODEL"].endswith("name"):  # Azure: "your deployment's name"
        env["DIALECTIC_DEFAULT_MODEL"] = "dialectic-prod"
    return env


@pytest.mark.integration
@pytest.mark.parametrize("provider", sorted(rows()))
async def test_each_providers_tested_settings_work(cli: Cli, provider: str) -> None:
    async with FakeOpenAI(replies="typical", seed=11, **SIMULATED[provider]) as fake:  # type: ignore[arg-type]
        env = environment(provider, fake.base_url)
        checked = await asyncio.to_thread(cli, "doctor", env=env)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        done = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "consensus", "--json",
                                       env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["complete"] and not result["missing"] and not result["rehearsal"]
    refused = [r for r in fake.requests if r.outcome.startswith("fail")]
    assert not refused, [r.body.keys() for r in refused]
    assert "sk-test-provider-key" not in done.stdout + done.stderr + checked.stdout
