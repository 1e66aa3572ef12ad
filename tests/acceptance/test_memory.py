"""The garbage collector of a `dialectic` process: nothing collected while it starts, start-up
frozen once its work begins, larger batches after, and the SDK loaded by the first debate frozen
too; `main()` called inside another program (as here) leaves that program's collector alone."""

from __future__ import annotations

import asyncio
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
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
#: runs `python -m bot ARGS` as the real entry point does, then reports the collector's state
#: (from an exit handler registered after the entry point's own, so run before it ends the
#: process: bot/service/memory.py)
PROBE = """
import atexit, gc, json, runpy, sys
from bot.service import memory
def report():
    sdk = sys.modules.get("openai")
    young = {id(o) for o in gc.get_objects()} if sdk is not None else set()
    print(json.dumps({"threshold": gc.get_threshold(), "enabled": gc.isenabled(),
                      "frozen": gc.get_freeze_count(), "sdk": sdk is not None,
                      "sdk_young": [n for n in ("AsyncOpenAI", "BaseModel")
                                    if sdk is not None and id(getattr(sdk, n)) in young]}),
          file=sys.stderr)
def starting(started=memory.starting):
    started()
    atexit.register(report)
memory.starting = starting
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


def _probe(tmp_path: Path, *args: str, **environ: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "DATABASE_", "SLACK_"))}
    env.update(DIALECTIC_CONFIG=os.devnull, PYTHONPATH=str(ROOT), **environ)
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


async def test_the_sdk_a_run_loads_for_its_first_call_is_frozen_like_start_up(
        tmp_path: Path) -> None:
    """The `openai` SDK is imported when the debate builds its client, after start-up was
    frozen: its classes are frozen too (not left young for every later collection to walk)."""
    async with FakeOpenAI() as fake:
        state = await asyncio.to_thread(
            _probe, tmp_path, "run", "Should we cache the catalogue?", "--mode", "simple",
            "--json", OPENAI_API_KEY="test-key", OPENAI_BASE_URL=fake.base_url)
    assert state["sdk"] is True and state["enabled"] is True
    assert state["sdk_young"] == []


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


def test_loading_after_start_up_collects_nothing_meanwhile_and_freezes_what_it_built(
        restored_gc: None) -> None:
    memory.starting()
    memory.started()
    frozen = gc.get_freeze_count()
    with memory.loading():
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]   # tracked containers, as a module's classes are
    assert gc.isenabled() and gc.get_threshold() == memory.THRESHOLDS
    assert gc.get_freeze_count() >= frozen + len(built)
    assert not any(o is built[0] for o in gc.get_objects())


def test_loading_during_start_up_leaves_it_to_started(restored_gc: None) -> None:
    frozen = gc.get_freeze_count()
    memory.starting()
    with memory.loading():
        pass
    assert not gc.isenabled() and gc.get_freeze_count() == frozen   # started() freezes it


def test_loading_without_starting_changes_nothing(restored_gc: None) -> None:
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    with memory.loading():
        assert gc.isenabled() == before[1]
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


def test_main_inside_another_program_leaves_its_collector_alone(
        restored_gc: None, capsys: pytest.CaptureFixture[str]) -> None:
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    assert main(["presets"]) == 0
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


#: runs `python -m bot ARGS` as the real entry point does, beside an object that only the
#: interpreter's teardown frees (a global of the program): it says so if the process is taken
#: apart at exit
WITNESS = """
import runpy, sys
class Witness:
    def __del__(self, write=sys.__stderr__.write):   # bound now: teardown clears the globals
        write("taken apart\\n")
witness = Witness()
sys.argv = ["dialectic", *sys.argv[1:]]
runpy.run_module("bot", run_name="__main__")
"""


def _witnessed(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "DIALECTIC_", "DATABASE_", "SLACK_"))}
    env.update(DIALECTIC_CONFIG=os.devnull, PYTHONPATH=str(ROOT),
               XDG_DATA_HOME=str(tmp_path / "xdg"))
    return subprocess.run([sys.executable, "-c", WITNESS, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_command_that_returned_ends_without_the_interpreters_teardown(tmp_path: Path) -> None:
    done = _witnessed(tmp_path, "run", "Should we cache the catalogue?", "--mode", "simple",
                      "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"   # its whole output, flushed
    assert "taken apart" not in done.stderr


def test_a_command_ending_without_teardown_keeps_its_exit_status(tmp_path: Path) -> None:
    done = _witnessed(tmp_path, "run", "   ", "--json")   # refused: a usage error, status 2
    assert done.returncode == 2 and "error:" in done.stderr
    assert "taken apart" not in done.stderr


def test_a_command_that_raised_is_ended_by_python(tmp_path: Path) -> None:
    done = _witnessed(tmp_path, "run", "--no-such-option")   # argparse exits (SystemExit)
    assert done.returncode == 2
    assert "taken apart" in done.stderr   # the witness does work: this process was taken apart
