"""The `dialectic` command line, run as a subprocess the way people run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.cli.debate import exit_code
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should a startup adopt microservices from day one?"
KEYS = {"id", "status", "mode", "topic", "verdict", "consensus", "divergence", "trace_table",
        "phases", "degraded", "cost", "elapsed_seconds", "rehearsal"}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIALECTIC_"))}
    base["DIALECTIC_CONFIG"] = os.devnull  # no settings file
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=120, check=False)


def test_run_offline_prints_the_promised_json() -> None:
    done = _run("run", TOPIC, "--mode", "consensus", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert KEYS <= set(result)
    assert result["rehearsal"] is True and result["status"] == "completed"
    assert {"alpha", "alpha_interval", "kappa", "band", "routing", "irreconcilable", "judges",
            "ratings"} <= set(result["consensus"])
    assert {"agreements", "disagreements"} <= set(result["divergence"])
    assert {"usd", "prompt_tokens", "completion_tokens", "calls", "by_model"} <= set(
        result["cost"])


def test_run_with_progress_says_rehearsal() -> None:
    done = _run("run", TOPIC, "--mode", "simple")
    assert done.returncode == 0, done.stderr
    assert "REHEARSAL" in done.stdout and "Verdict:" in done.stdout


async def test_run_against_the_fake_server_started_by_hand() -> None:
    async with FakeOpenAI() as fake:
        env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url}
        import asyncio

        done = await asyncio.to_thread(_run, "run", TOPIC, "--mode", "structured", "--json",
                                       env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["rehearsal"] is False and result["cost"]["calls"] == 7
    assert "test-key" not in done.stdout + done.stderr


def test_an_unreachable_endpoint_fails_with_a_nonzero_exit() -> None:
    done = _run("run", TOPIC, "--mode", "simple", "--rounds", "0", "--json",
                env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "DIALECTIC_MAX_RETRIES": "0"})
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "failed"


@pytest.mark.parametrize(("args", "needle"), [
    (("run", "x", "--mode", "bogus"), "invalid choice"),
    (("run", "   "), "empty"),
    (("run", "ok", "--preset", "nope"), "unknown preset"),
    (("run", "ok", "--rounds", "9"), "rounds"),
])
def test_bad_input_is_refused_with_a_clear_message(args: tuple[str, ...], needle: str) -> None:
    done = _run(*args)
    assert done.returncode == 2
    assert needle in (done.stdout + done.stderr)
    assert "Traceback" not in done.stderr


def test_estimate_and_presets() -> None:
    done = _run("estimate", TOPIC, "--mode", "consensus", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["calls"] == 10
    presets = _run("presets")
    assert all(name in presets.stdout for name in ("market", "decision", "compliance", "appeal",
                                                   "brief"))


@pytest.mark.parametrize(("status", "complete", "code"), [
    ("completed", True, 0), ("completed", False, 3), ("failed", False, 1),
    ("timed_out", False, 1),
])
def test_exit_codes(status: str, complete: bool, code: int) -> None:
    assert exit_code(status, complete=complete) == code


def test_replay_of_an_unknown_debate_says_so_without_a_traceback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/cli.db"}
    done = _run("replay", "nope", "--rounds", "1", env=env)
    assert done.returncode == 2
    assert "not found" in done.stdout + done.stderr and "Traceback" not in done.stderr
