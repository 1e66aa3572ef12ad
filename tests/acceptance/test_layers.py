"""The direction of dependencies (DESIGN.md), as import-linter contracts in pyproject.toml:
entry > surfaces (slack | http | cli, independent) > scheduling > service > storage > engine;
the engine imports no Slack, SQL, aiohttp or APScheduler; only its gateway imports openai; inside
the engine, each group (untrusted, provider, money, oversight, protocols, schemas) imports only
what its package docstring allows. Imports inside functions count (grimp reads every import
statement)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=120,
                          check=False)


def test_the_layer_contracts_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _copy(tmp_path: Path) -> Path:
    for name in ("engine", "storage", "bot"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_an_upward_import_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    service = root / "bot" / "service" / "results.py"
    service.write_text(service.read_text() + "\n\ndef _late() -> None:\n"
                       "    from bot.slack import mrkdwn  # upwards, and hidden in a function\n")
    done = _lint(root)
    assert done.returncode != 0
    assert "bot.service.results -> bot.slack.mrkdwn" in done.stdout


def test_sql_in_the_engine_breaks_the_contracts(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    cost = root / "engine" / "money" / "cost.py"
    cost.write_text(cost.read_text() + "\nimport sqlalchemy  # noqa\n")
    done = _lint(root)
    assert done.returncode != 0 and "engine.money.cost -> sqlalchemy" in done.stdout


#: One forbidden import per engine group contract: (module file, import, what the report names).
ENGINE_BREACHES = [
    ("engine/untrusted/glyphs.py", "from engine.money import cost",
     "engine.untrusted.glyphs -> engine.money.cost"),
    ("engine/provider/llm.py", "from engine.core import runner",
     "engine.provider.llm -> engine.core.runner"),
    ("engine/money/sizing.py", "from engine.provider import gateway",
     "engine.money.sizing -> engine.provider.gateway"),
    ("engine/oversight/judge_audit.py", "from engine.provider import llm",
     "engine.oversight.judge_audit -> engine.provider.llm"),
    ("engine/protocols/simple.py", "from engine.oversight import thresholds",
     "engine.protocols.simple -> engine.oversight.thresholds"),
    ("engine/schemas/base.py", "from engine import domain",
     "engine.schemas.base -> engine.domain"),
    ("engine/reading/headline.py", "from engine.core import runner",
     "engine.reading.headline -> engine.core.runner"),
    ("engine/options.py", "from engine.oversight import thresholds",
     "engine.options -> engine.oversight.thresholds"),
]


def test_each_engine_group_contract_catches_its_own_breach(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    for path, statement, _ in ENGINE_BREACHES:
        module = root / path
        module.write_text(module.read_text() + "\n\ndef _late() -> None:\n"
                          f"    {statement}  # noqa: F401\n")
    done = _lint(root)
    assert done.returncode != 0
    for _, _, named in ENGINE_BREACHES:
        assert named in done.stdout, named
    assert f", {len(ENGINE_BREACHES)} broken." in done.stdout, done.stdout
