"""scripts/rehouse_engine.py rewrites what names a moved engine module and nothing else, and a
second run changes nothing (the lead re-runs it after merging branches that import old paths)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "rehouse_engine.py"
_spec = importlib.util.spec_from_file_location("rehouse_engine", SCRIPT)
assert _spec is not None and _spec.loader is not None
rehouse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rehouse)

OLD = '''"""Uses engine.runner and engine/headline.py."""
from engine import prompts, verdicts  # both
from engine import errors
from engine.runner import DebateContext
import engine.figures

    from engine import agreement  # noqa: F401
x = settings.engine.presets
engine.presets = {}
PATCH = "engine.debate.run_debate"
PLANTED = "from engine import runner"
y = "engine.core.runner"  # engine.replay
'''

NEW = '''"""Uses engine.core.runner and engine/reading/headline.py."""
from engine.core import prompts  # both
from engine.reading import verdicts
from engine import errors
from engine.core.runner import DebateContext
import engine.reading.figures

    from engine.reading import agreement  # noqa: F401
x = settings.engine.presets
engine.presets = {}
PATCH = "engine.core.debate.run_debate"
PLANTED = "from engine.core import runner"
y = "engine.core.runner"  # engine.core.replay
'''


def test_python_is_rewritten_in_imports_strings_and_comments_only() -> None:
    assert rehouse.rewrite(Path("m.py"), OLD) == NEW


def test_a_second_run_changes_nothing() -> None:
    assert rehouse.rewrite(Path("m.py"), NEW) == NEW


@pytest.mark.parametrize(("old", "new"), [
    ('forbidden_modules = ["engine.runner", "engine.ports"]',
     'forbidden_modules = ["engine.core.runner", "engine.ports"]'),
    ("see `engine/verdicts.py` and engine.headline", "see `engine/reading/verdicts.py` and "
                                                     "engine.reading.headline"),
    ("engine/settings.py, engine.domain, bot.engine.x", "engine/settings.py, engine.domain, "
                                                        "bot.engine.x"),
])
def test_text_files_name_the_new_places(old: str, new: str) -> None:
    assert rehouse.rewrite(Path("pyproject.toml"), old) == new
    assert rehouse.rewrite(Path("pyproject.toml"), new) == new


def test_the_tree_names_no_old_place() -> None:
    assert rehouse.rewrite_references(write=False) == []
    assert all(not (rehouse.ROOT / "engine" / f"{m}.py").exists() for m in rehouse.MOVES)
