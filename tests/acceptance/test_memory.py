"""The garbage collector of a `dialectic` process: nothing collected while it starts, start-up
frozen once its work begins, larger batches after; `main()` called inside another program (as
here) leaves that program's collector alone."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.main import main
from bot.service import memory

ROOT = Path(__file__).resolve().parents[2]
#: runs `python -m bot ARGS` as the real entry point does, then reports the collector's state
PROBE = """
import atexit, gc, json, runpy, sys
atexit.register(lambda: print(json.dumps({"threshold": gc.get_threshold(),
    "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}), file=sys.stderr))
sys.argv = ["dialectic", *sys.argv[1:]]
runpy.run_module("bot", run_name="__main__")
"""


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()
    memory._tuned = False


def _probe(tmp_path: Path, *args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "DATABASE_", "SLACK_"))}
    env.update(DIALECTIC_CONFIG=os.devnull, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stderr.strip().splitlines()[-1]))


def test_a_command_process_freezes_start_up_and_collects_in_larger_batches(
        tmp_path: Path) -> None:
    state = _probe(tmp_path, "run", "Should we cache the catalogue?", "--mode", "simple",
                   "--json")
    assert state["threshold"] == list(memory.THRESHOLDS)
    assert state["enabled"] is True
    assert isinstance(state["frozen"], int) and state["frozen"] > 50_000


def test_a_quick_command_never_collects_and_freezes_nothing(tmp_path: Path) -> None:
    state = _probe(tmp_path, "presets")
    assert state["enabled"] is False and state["frozen"] == 0


def test_started_without_starting_changes_nothing(restored_gc: None) -> None:
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    memory.started()
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


def test_starting_then_started_disables_then_freezes_and_sets_the_thresholds(
        restored_gc: None) -> None:
    memory.starting()
    assert not gc.isenabled()
    memory.started()
    assert gc.isenabled() and gc.get_threshold() == memory.THRESHOLDS
    assert gc.get_freeze_count() > 0


def test_main_inside_another_program_leaves_its_collector_alone(
        restored_gc: None, capsys: pytest.CaptureFixture[str]) -> None:
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    assert main(["presets"]) == 0
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before
