"""`dialectic eval` against the fake provider whose model knows each answer with probability p
(tests/fakes/knowing.py): the figures it reports are the ones the fake was built to produce, the
budget is asked before anything is spent, a crashed run resumes without paying twice, and a
stored run is reprinted as it was."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.service.debates import DebateService
from bot.service.evaluations import EvalSpec, Evaluations
from bot.service.providers import make_llm
from bot.settings import Settings
from engine.evaluation.builtin import arithmetic
from storage.db import Database
from tests.fakes.knowing import Knowing
from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, Done, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

MODE_KEYS = {"mode", "n", "accuracy", "interval", "cost_usd", "calls", "tokens", "seconds"}
COMPARISON_KEYS = {"mode", "against", "difference", "interval", "p_value", "b", "c",
                   "cost_ratio", "items"}


def _env(fake: FakeOpenAI, tmp_path: Path, **more: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'eval.db'}",
            "DIALECTIC_BACKOFF_BASE": "0.01", "DIALECTIC_BACKOFF_CAP": "0.05", **more}


def _knowing(n: int, seed: int, **knobs: Any) -> Knowing:
    return Knowing({i.question: i.answer for i in arithmetic(n, seed).items}, **knobs)


async def _eval(cli: Cli, env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(cli, "eval", *args, env=env)


def _json(done: Done) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _mode(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in report["modes"] if m["mode"] == name)


def _comparison(report: dict[str, Any], mode: str, against: str) -> dict[str, Any]:
    return next(c for c in report["comparisons"]
                if c["mode"] == mode and c["against"] == against)


async def test_a_single_calls_interval_holds_the_models_p(cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        knowing = _knowing(200, seed=11, p=0.7)
        knowing.install(fake)
        done = await _eval(cli, _env(fake, tmp_path), "--builtin", "arithmetic", "--n", "200",
                           "--seed", "11", "--modes", "single", "--json", "--yes",
                           "--concurrency", "8")
        report, asked = _json(done), fake.answered()
    assert "200/200" in done.stderr and "spent $" in done.stderr   # the progress, on stderr
    single = _mode(report, "single")
    assert single["n"] == 200 and single["calls"] == 1.0 and asked == 200
    low, high = single["interval"]
    assert low < 0.7 < high and high - low < 0.14
    assert single["accuracy"] == knowing.right / 200
    assert report["complete"] is True and report["rehearsal"] is False
    assert set(single) >= MODE_KEYS and single["cost_usd"] > 0 and single["tokens"] > 0


@pytest.mark.parametrize(("wrong", "beats"), [("scatter", True), ("concentrate", False)])
async def test_a_five_sample_vote_beats_one_call_only_when_wrong_answers_scatter(
        cli: Cli, tmp_path: Path, wrong: str, beats: bool) -> None:
    async with FakeOpenAI() as fake:
        _knowing(80, seed=5, p=0.6, wrong=wrong).install(fake)
        report = _json(await _eval(cli, _env(fake, tmp_path), "--builtin", "arithmetic",
                                   "--n", "80", "--seed", "5", "--modes", "single,vote",
                                   "--samples", "5", "--json", "--yes", "--concurrency", "8"))
        assert fake.answered() == 80 * 6
    vote = _comparison(report, "vote", "single")
    assert set(vote) == COMPARISON_KEYS
    assert _mode(report, "vote")["calls"] == 5.0
    assert 4.0 < vote["cost_ratio"] < 6.0
    assert (vote["interval"][0] > 0) is beats
    if not beats:
        assert vote["interval"][0] <= 0 <= vote["interval"][1]
    assert vote["p_value"] < 0.05 if beats else vote["p_value"] >= 0.05


async def test_debate_modes_answer_with_their_synthesis_final_answer_and_decision(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        _knowing(3, seed=2, p=1.0).install(fake)
        env = _env(fake, tmp_path)
        report = _json(await _eval(cli, env, "--builtin", "arithmetic", "--n", "3", "--seed",
                                   "2", "--modes", "single,panel,critique,redteam", "--json",
                                   "--yes"))
        listed = await asyncio.to_thread(cli, "list", "--limit", "50", env=env)
    for mode in ("single", "panel", "critique", "redteam"):
        assert _mode(report, mode)["accuracy"] == 1.0, mode
        assert _mode(report, mode)["n"] == 3
    assert _mode(report, "panel")["calls"] > 3
    # each item of a debate mode is a debate, stored with the others
    assert listed.stdout.count("panel") == 3 and listed.stdout.count("redteam") == 3


async def test_the_estimate_is_refused_before_anything_is_spent_when_the_day_cannot_hold_it(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        env = _env(fake, tmp_path, DIALECTIC_DAILY_BUDGET_USD="0.001")
        done = await _eval(cli, env, "--builtin", "arithmetic", "--n", "100", "--modes",
                           "single,vote,panel", "--yes")
        listed = await _eval(cli, env, "list")
        assert fake.count() == 0
    assert done.returncode == 2
    message = done.stdout.strip()
    assert "this evaluation would cost about $" in message and "$0.00" in message
    assert len(message.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "no evaluations stored" in listed.stdout


async def test_without_a_terminal_it_asks_for_yes_and_runs_nothing(cli: Cli,
                                                                   tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        done = await _eval(cli, _env(fake, tmp_path), "--builtin", "arithmetic", "--n", "5")
        assert fake.count() == 0
    assert done.returncode == 2
    assert "this evaluation will cost about $" in done.stdout
    assert "pass --yes" in done.stdout and len(done.stdout.strip().splitlines()) == 1


async def test_a_crashed_run_resumes_without_paying_for_any_reply_twice(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 12
    async with FakeOpenAI() as fake:
        knowing = _knowing(n, seed=3, p=0.7)
        knowing.install(fake)
        env = _env(fake, tmp_path)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        dataset = arithmetic(n, 3)
        held = dataset.items[-1].question
        fake.hang(lambda body: knowing.question_in(body) == held, seconds=60,
                  times=None)                       # the last item never answers: a crash
        database = Database(env["DATABASE_URL"])
        await database.upgrade()
        svc = DebateService(engine=Settings().engine, settings=Settings().service, db=database,
                            llm_factory=make_llm)
        evals = Evaluations(svc)
        spec = evals.check(EvalSpec(dataset=dataset, modes=("single", "vote"), samples=3,
                                    seed=3, concurrency=4))
        run = await evals.start(spec, await evals.preflight(spec))
        crash = asyncio.ensure_future(evals.execute(run, spec))
        async with asyncio.timeout(30):   # every other item answered and stored
            while sum(m.n for m in (await evals.show(run.id)).report.modes) < (n - 1) * 2:
                await asyncio.sleep(0.05)
        crash.cancel()                                # the process dies here
        await asyncio.gather(crash, return_exceptions=True)
        await svc.aclose()
        await database.dispose()
        paid_before = fake.answered()
        fake._hangs.clear()
        done = await _eval(cli, env, "--builtin", "arithmetic", "--n", str(n), "--seed", "3",
                           "--modes", "single,vote", "--samples", "3", "--json", "--yes")
        paid_after = fake.answered()
    report = _json(done)
    assert paid_before == (n - 1) * 4
    assert paid_after == n * 4                        # the missing item's 4 calls, no more
    assert report["id"] == run.id and report["complete"] is True
    assert f"resuming evaluation {run.id} ({(n - 1) * 2} of {n * 2} done)" in done.stderr


async def test_eval_show_reprints_the_stored_report_and_list_names_the_run(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        _knowing(10, seed=4, p=0.5).install(fake)
        env = _env(fake, tmp_path)
        first = _json(await _eval(cli, env, "--builtin", "arithmetic", "--n", "10", "--seed",
                                  "4", "--modes", "single,vote", "--samples", "3", "--json",
                                  "--yes"))
        asked = fake.count()
        shown = _json(await _eval(cli, env, "show", first["id"], "--json"))
        text = await _eval(cli, env, "show", first["id"])
        listed = await _eval(cli, env, "list")
        resumed = _json(await _eval(cli, env, "--resume", first["id"], "--json"))
        assert fake.count() == asked                   # reading costs nothing
    assert shown["modes"] == first["modes"] and shown["comparisons"] == first["comparisons"]
    assert resumed["modes"] == first["modes"] and resumed["id"] == first["id"]
    assert text.returncode == 0 and f"evaluation {first['id']} (finished" in text.stdout
    assert "vote" in text.stdout and "a single call" in text.stdout   # the reading
    assert first["id"] in listed.stdout and "single 10/10, vote 10/10" in listed.stdout


async def test_rehearsal_is_labelled_and_its_accuracy_called_meaningless(
        cli: Cli, tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"}
    report = _json(await _eval(cli, env, "--builtin", "arithmetic", "--n", "3", "--modes",
                               "single", "--json", "--yes"))
    text = await _eval(cli, env, "show", report["id"])
    assert report["rehearsal"] is True and "accuracy is meaningless" in report["note"]
    said = " ".join(text.stdout.split())   # wrapped at words to the terminal's width
    assert text.stdout.count("REHEARSAL") >= 2 and "accuracy is meaningless" in said


@pytest.mark.parametrize(("args", "says"), [
    (("--builtin", "arithmetic", "--modes", "consensus"), "consensus answers yes or no"),
    (("--builtin", "arithmetic", "--modes", "single,chorus"), "unknown evaluation mode 'chorus'"),
    (("--builtin", "arithmetic", "--samples", "0"), "--samples"),
    (("--builtin", "arithmetic", "--models", "anthropic:claude-sonnet-4-5"),
     "'anthropic', which is not configured"),   # a provider prefix nobody configured
    (("missing.jsonl",), "missing.jsonl: cannot"),
    (("bad.jsonl",), "bad.jsonl:2:"),
    (("show", "nope"), "nope"),
    ((), "name a dataset"),
])
def test_bad_input_is_one_line_and_nothing_is_stored(cli: Cli, tmp_path: Path,
                                                     args: tuple[str, ...], says: str) -> None:
    (tmp_path / "bad.jsonl").write_text('{"question": "a?", "answer": 1}\n{"question": 3}\n')
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'b.db'}"}
    cli("db", "upgrade", env=env)
    done = cli("eval", *args, "--yes", env=env)
    assert done.returncode == 2, done
    said = done.stdout + done.stderr
    assert says in said and "Traceback" not in said
    assert len(done.stdout.strip().splitlines()) == (1 if done.stdout else 0)
    assert "no evaluations stored" in cli("eval", "list", env=env).stdout


async def test_the_plot_is_written_or_the_missing_extra_named(cli: Cli, tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"}
    done = await _eval(cli, env, "--builtin", "arithmetic", "--n", "3", "--modes",
                       "single,vote", "--samples", "2", "--yes", "--plot", "plot.png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert done.returncode == 2 and "pip install 'dialectic[plot]'" in done.stdout
        assert not (tmp_path / "plot.png").exists()
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")


async def test_a_plot_that_cannot_be_drawn_or_written_is_refused_before_anything_runs(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--plot` is checked before the estimate is asked: without the plot extra, or into a folder
    that does not exist, nothing is run, stored or spent (the old code ran the evaluation, then
    failed at the plot)."""
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"}
    ask = ("--builtin", "arithmetic", "--n", "3", "--modes", "single", "--yes")
    with monkeypatch.context() as without:   # as if the plot extra were not installed
        without.setitem(sys.modules, "matplotlib", None)
        without.setitem(sys.modules, "matplotlib.figure", None)
        done = await _eval(cli, env, *ask, "--plot", str(tmp_path / "plot.png"))
    assert done.returncode == 2 and "pip install 'dialectic[plot]'" in done.stdout
    done = await _eval(cli, env, *ask, "--plot", str(tmp_path / "no-such" / "plot.png"))
    assert done.returncode == 2 and "there is no folder" in done.stdout, done
    for said in (done.stdout, done.stderr):
        assert "evaluation will cost" not in said and "Traceback" not in said
    assert not (tmp_path / "p.db").exists()   # not even a database was created


async def test_a_run_the_budget_stops_is_incomplete_and_resumes_when_there_is_room(
        cli: Cli, tmp_path: Path) -> None:
    args = ("--builtin", "arithmetic", "--n", "12", "--modes", "single", "--concurrency", "1")
    async with FakeOpenAI() as fake:
        asked = await _eval(cli, _env(fake, tmp_path), *args)    # no terminal: says, runs nothing
        low = float(re.search(r"cost about \$([0-9.]+)", asked.stdout)[1])  # type: ignore[index]
        tight = _env(fake, tmp_path, DIALECTIC_DAILY_BUDGET_USD=f"{low * 1.05:.6f}")
        stopped = await _eval(cli, tight, *args, "--json", "--yes")
        paid = fake.answered()
        roomy = _env(fake, tmp_path, DIALECTIC_DAILY_BUDGET_USD="100")
        resumed = await _eval(cli, roomy, *args, "--json", "--yes")
        assert fake.answered() == 12                   # each item's call once, over both runs
    partial = json.loads(stopped.stdout)
    assert stopped.returncode == 3 and partial["status"] == "stopped"
    assert partial["complete"] is False and 0 < paid < 12
    assert _mode(partial, "single")["n"] == paid
    assert "budget" in partial["stopped"]
    whole = _json(resumed)
    assert whole["id"] == partial["id"] and whole["complete"] is True
    assert _mode(whole, "single")["n"] == 12


async def test_a_debate_that_fails_outright_is_not_counted_and_a_rerun_retries_it(
        cli: Cli, tmp_path: Path) -> None:
    args = ("--builtin", "arithmetic", "--n", "2", "--modes", "panel", "--concurrency", "1",
            "--json", "--yes")
    async with FakeOpenAI() as fake:
        env = _env(fake, tmp_path)
        fake.fail(lambda body: True, 500, times=None)      # the provider is down
        stopped = await _eval(cli, env, *args)
        fake._faults.clear()                               # and back
        _knowing(2, seed=0, p=1.0).install(fake)
        resumed = await _eval(cli, env, *args)
    partial = json.loads(stopped.stdout)
    assert stopped.returncode == 3 and partial["status"] == "stopped"
    assert _mode(partial, "panel")["n"] == 0                # a failure is no wrong answer
    assert "failed" in partial["stopped"] and "rerun" in partial["stopped"]
    whole = _json(resumed)
    assert whole["id"] == partial["id"] and whole["complete"] is True
    assert _mode(whole, "panel")["n"] == 2 and _mode(whole, "panel")["accuracy"] == 1.0
