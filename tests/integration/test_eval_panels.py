"""`dialectic eval --panels`: a mixed-family panel against a one-family one on the same yes/no
items, through the CLI, the real `openai` client and the fake server; accuracy, agreement and
self-preference per panel; and the same in rehearsal, labelled."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, Done, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

MIXED = "gpt-4o-mini,claude-3-5-haiku-latest,gemini-2.0-flash"
ONE = "gpt-4o-mini x3"
ITEMS = 3


def _env(tmp_path: Path, fake: FakeOpenAI | None = None) -> dict[str, str]:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'eval.db'}",
           "DIALECTIC_BACKOFF_BASE": "0.01", "DIALECTIC_BACKOFF_CAP": "0.05"}
    if fake is not None:
        env.update({"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
                    "DIALECTIC_DEFAULT_MODEL": "gpt-4o-mini"})
    return env


async def _eval(cli: Cli, env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(cli, "eval", *args, env=env)


def _words(text: str) -> str:
    """The terminal's text with its wrapping undone."""
    return " ".join(text.split())


def _panel(report: dict[str, Any], mode: str) -> dict[str, Any]:
    return next(p for p in report["panels"] if p["mode"] == mode)


async def test_a_mixed_panel_is_compared_with_a_one_family_panel(cli: Cli,
                                                                 tmp_path: Path) -> None:
    async with FakeOpenAI(seed=4) as fake:
        env = _env(tmp_path, fake)
        done = await _eval(cli, env, "--builtin", "decisions", "--n", str(ITEMS), "--json",
                           "--yes", "--panels", MIXED, ONE)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        asked = {r.body.get("model") for r in fake.requests}
        shown = await _eval(cli, env, "show", report["id"])
    assert [m["mode"] for m in report["modes"]] == ["jury1", "jury2"]
    assert all(m["n"] == ITEMS for m in report["modes"])
    assert any((c["mode"] == "jury2" and c["against"] == "jury1") or
               (c["mode"] == "jury1" and c["against"] == "jury2") for c in report["comparisons"])
    assert {"claude-3-5-haiku-latest", "gemini-2.0-flash"} <= asked
    mixed, one = _panel(report, "jury1"), _panel(report, "jury2")
    assert mixed["models"] == MIXED.split(",") and one["models"] == ["gpt-4o-mini"] * 3
    assert mixed["families"] == ["openai", "anthropic", "google"]
    assert one["families"] == ["openai"] * 3
    # the debaters are gpt-4o-mini: the mixed panel's gpt judge is left out of every debate,
    # and its scores, kept, measure its self-preference against Claude and Gemini
    assert mixed["debates"] == ITEMS and mixed["excluded"] == ITEMS
    assert mixed["unexcludable"] == 0
    assert mixed["self_preference"] is not None and mixed["self_preference_n"] == ITEMS
    # the one-family panel cannot exclude anyone: it says so in every debate, and has no
    # other family to measure a preference against
    assert one["excluded"] == 0 and one["unexcludable"] == ITEMS
    assert one["self_preference"] is None and one["self_preference_n"] == 0
    assert one["alpha_n"] + 0 <= ITEMS
    # the terminal says the same (a stored run reprinted)
    assert shown.returncode == 0, shown.stderr
    text = _words(shown.stdout)
    assert "jury1: gpt-4o-mini, claude-3-5-haiku-latest, gemini-2.0-flash (mixed: openai, " \
           "anthropic, google)" in text
    assert f"a judge excluded in {ITEMS} of {ITEMS} debate(s)" in text
    assert f"a side scored by its own family only in {ITEMS}" in text
    assert "self-preference not measured: no debate had judges both" in text
    assert f"over {ITEMS} debate(s)" in text


async def test_panels_in_rehearsal_are_labelled(cli: Cli, tmp_path: Path) -> None:
    done = await _eval(cli, _env(tmp_path), "--builtin", "decisions", "--n", "2", "--yes",
                       "--panels", MIXED, ONE)
    assert done.returncode == 0, done.stderr
    text = _words(done.stdout)
    assert "Panels (REHEARSAL: figures from the offline model, not a measurement)" in text
    assert "self-preference not measured: the rehearsal model answers for every debater" in text
    assert "jury2: gpt-4o-mini, gpt-4o-mini, gpt-4o-mini (one family: openai, openai, openai)" \
        in text


async def test_a_bad_panel_is_one_line_and_runs_nothing(cli: Cli, tmp_path: Path) -> None:
    done = await _eval(cli, _env(tmp_path), "--builtin", "decisions", "--yes",
                       "--panels", "gpt-4o-mini")
    assert done.returncode != 0 and "a panel has 2 to" in done.stdout + done.stderr
    arithmetic = await _eval(cli, _env(tmp_path), "--builtin", "arithmetic", "--n", "2",
                             "--yes", "--panels", ONE)
    assert arithmetic.returncode != 0
    assert "must be yes or no" in arithmetic.stdout + arithmetic.stderr


JURY_TOML = """
[families]
prod-reasoner = "openai"

[presets.jury]
description = "Three judges, each of another family."
judges = [
  { name = "gpt", expertise = "engineering", model = "gpt-4o-mini" },
  { name = "claude", expertise = "business", model = "claude-3-5-haiku-latest" },
  { name = "gemini", expertise = "risk", model = "gemini-2.0-flash" },
]
"""


def test_a_preset_names_a_judge_per_family(cli: Cli, tmp_path: Path) -> None:
    """The documented settings (docs/providers.md, Mixed-family panels) load, and `presets`
    shows each judge's model and family."""
    config = tmp_path / "dialectic.toml"
    config.write_text(JURY_TOML)
    done = cli("presets", env={"DIALECTIC_CONFIG": str(config)})
    assert done.returncode == 0, done.stderr
    text = _words(done.stdout)
    assert ("judges gpt (gpt-4o-mini, openai), claude (claude-3-5-haiku-latest, anthropic), "
            "gemini (gemini-2.0-flash, google) (mixed families: anthropic, google, openai; "
            "self-vote exclusion)") in text


async def test_a_jury_mode_without_its_panel_is_unknown(cli: Cli, tmp_path: Path) -> None:
    done = await _eval(cli, _env(tmp_path), "--builtin", "decisions", "--yes", "--modes", "jury1")
    assert done.returncode != 0
    assert "unknown evaluation mode 'jury1'" in done.stdout + done.stderr
