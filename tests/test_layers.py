"""The direction of dependencies (DESIGN.md): bot -> engine, bot -> storage, storage -> engine.
engine imports neither Slack, SQL, aiohttp nor APScheduler; only its gateway imports openai;
storage knows nothing of Slack or bot; bot knows nothing of SQL."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BANNED = {
    "engine": {"slack_bolt", "slack_sdk", "sqlalchemy", "aiohttp", "apscheduler", "alembic",
               "storage", "bot", "asyncpg", "aiosqlite"},
    "storage": {"slack_bolt", "slack_sdk", "bot", "aiohttp", "apscheduler"},
    "bot": {"sqlalchemy", "asyncpg", "aiosqlite", "alembic"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(BANNED))
def test_packages_import_only_downwards(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & BANNED[package])
        for path in (ROOT / package).rglob("*.py")
        if _imports(path) & BANNED[package]
    }
    assert offenders == {}


def test_only_the_gateway_imports_openai() -> None:
    users = sorted(str(p.relative_to(ROOT)) for pkg in ("engine", "storage", "bot")
                   for p in (ROOT / pkg).rglob("*.py") if "openai" in _imports(p))
    assert users == ["engine/gateway.py"]
