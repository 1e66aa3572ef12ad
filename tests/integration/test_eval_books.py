"""An evaluation keeps its own books (docs/evaluation.md), through `dialectic eval` as users run
it against the fake provider: at a tight cap with `--concurrency 8` it waits for its own holds
and finishes; what it reports as spent is the ledger's change, failed debates included; a stop
is said on a line of its own and "N items lack an outcome" counts items; its debates are
labelled on `list` and `show` and stay out of the review queue, the judge audit and routing
statistics unless `--review` asks."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from engine.evaluation.builtin import arithmetic, decisions
from storage.budget import SETTLE
from storage.db import Database
from storage.models import BudgetLedgerRow
from tests.fakes.chat_requests import Body, last_text, message_text
from tests.fakes.knowing import Knowing
from tests.fakes.obedience import markers_from_rule, readable
from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, Done, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

N = 12
SINGLE = ("--builtin", "arithmetic", "--n", str(N), "--modes", "single")


def _env(fake: FakeOpenAI, db: Path, **more: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "DIALECTIC_BACKOFF_BASE": "0.01", "DIALECTIC_BACKOFF_CAP": "0.05", **more}


async def _cli(cli: Cli, env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(cli, *args, env=env)


def _json(done: Done) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _estimate(said: str) -> tuple[float, float]:
    """The low and high figures of "this evaluation will cost about $X–$Y"."""
    found = re.search(r"cost about \$([0-9.]+)–\$([0-9.]+)", said)
    assert found is not None, said
    return float(found[1]), float(found[2])


async def _ledger_spent(url: str) -> float:
    """What the budget's ledger booked as spent, every day, every debate."""
    db = Database(url)
    try:
        async with db.transaction(readonly=True) as session:
            total = await session.scalar(select(func.sum(BudgetLedgerRow.amount_usd))
                                         .where(BudgetLedgerRow.kind == SETTLE))
    finally:
        await db.dispose()
    return float(total or 0.0)


def _asking(question: str) -> Callable[[Body], bool]:
    """Every request of a step about `question`, its re-asks included (the question is in an
    earlier user turn then)."""
    def match(body: Body) -> bool:
        markers = markers_from_rule(last_text(body, "system"))
        return any(question in readable(message_text(m), markers)
                   for m in body.get("messages") or [] if m.get("role") == "user")
    return match


def _knowing(n: int) -> Knowing:
    return Knowing({i.question: i.answer for i in arithmetic(n, 0).items}, p=0.8)


TIGHT = [("single", ("--builtin", "arithmetic", "--n", str(N), "--modes", "single"), N),
         ("consensus", ("--builtin", "decisions", "--n", "6", "--modes", "consensus"), 6)]


@pytest.mark.parametrize(("mode", "ask", "n"), TIGHT, ids=[t[0] for t in TIGHT])
async def test_at_a_tight_cap_with_concurrency_8_it_waits_for_its_own_holds_and_finishes(
        cli: Cli, tmp_path: Path, mode: str, ask: tuple[str, ...], n: int) -> None:
    """The old code reserved 8 items' holds at once, was refused the 5th by its own holds and
    stopped ("today's budget has $0.0005 left") with most of the day unspent; consensus, which
    the budget may downgrade, ran as another mode instead of waiting."""
    questions = {**{i.question: i.answer for i in arithmetic(N, 0).items},
                 **{i.question: i.answer for i in decisions().items}}
    async with FakeOpenAI(latency=0.3) as fake:   # the items' holds overlap, as in production
        Knowing(questions, p=0.8).install(fake)
        measured = _json(await _cli(cli, _env(fake, tmp_path / "roomy.db"), "eval", *ask,
                                    "--json", "--yes", "--concurrency", "8"))
        asking = await _cli(cli, _env(fake, tmp_path / "tight.db"), "eval", *ask)
        hold = _estimate(asking.stdout)[1] / n            # what one item holds while it runs
        cap = measured["cost_usd_total"] * 1.25 + hold * 1.5   # the run fits, 8 holds do not
        assert cap < 8 * hold
        tight = _env(fake, tmp_path / "tight.db", DIALECTIC_DAILY_BUDGET_USD=f"{cap:.6f}")
        done = await _cli(cli, tight, "eval", *ask, "--json", "--yes", "--concurrency", "8")
        listed = await _cli(cli, tight, "list")
    report = _json(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["status"] == "finished" and report["complete"] is True
    assert report["stopped"] is None and report["missing"] == []
    assert report["modes"][0]["n"] == n and report["cost_usd_total"] <= cap
    assert "downgraded" not in json.dumps(report["errors"])
    if mode != "single":   # each item's debate ran in the mode asked
        assert listed.stdout.count(f"  {mode} ") == n


async def test_the_report_counts_every_dollar_the_ledger_booked_failed_debates_included(
        cli: Cli, tmp_path: Path) -> None:
    """A panel debate whose every reply is malformed is billed and fails without an answer:
    the old report left its spend out ($0.17 a debate on a real provider)."""
    items = arithmetic(2, 0).items
    url = f"sqlite+aiosqlite:///{tmp_path / 'books.db'}"
    async with FakeOpenAI() as fake:
        knowing = _knowing(2)
        fake.invalid_json(_asking(items[1].question), times=None)
        knowing.install(fake)
        env = _env(fake, tmp_path / "books.db")
        args = ("eval", "--builtin", "arithmetic", "--n", "2", "--modes", "single,panel",
                "--concurrency", "1", "--yes")
        done = await _cli(cli, env, *args, "--json")
        text = await _cli(cli, env, "eval", "show", _json(done)["id"])
    report = _json(done)
    ledger = await _ledger_spent(url)
    answered = sum(m["cost_usd"] * m["n"] for m in report["modes"])
    assert abs(report["cost_usd_total"] - ledger) < 1e-9     # the ledger's change, all of it
    assert ledger - answered > 1e-4                          # the failed debate's replies
    assert report["status"] == "stopped" and "failed" in report["stopped"]
    assert "went to items without an outcome" in text.stdout


async def test_a_stop_is_a_line_of_its_own_and_the_missing_count_counts_items(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        _knowing(N).install(fake)
        low, _ = _estimate((await _cli(cli, _env(fake, tmp_path / "s.db"), "eval",
                                       *SINGLE)).stdout)
        tight = _env(fake, tmp_path / "s.db", DIALECTIC_DAILY_BUDGET_USD=f"{low * 1.05:.6f}")
        done = await _cli(cli, tight, "eval", *SINGLE, "--concurrency", "1", "--yes")
        answered = fake.answered()
        shown = _json(await _cli(cli, tight, "eval", "list", "--json"))
        again = await _cli(cli, tight, "eval", "show", shown[0]["id"], "--json")
    lacking = N - answered
    assert done.returncode == 3 and 0 < lacking < N
    out = " ".join(done.stdout.split())
    assert re.search(r"Stopped: today's budget has \$[0-9.]+ of \$[0-9.]+ left", out), out
    assert f"Incomplete: {lacking} item(s) lack an outcome in at least one mode" in out
    assert f"incomplete: {lacking} item(s) lack an outcome in some mode" in out
    stored = _json(again)
    assert len(stored["missing"]) == lacking and "budget" in stored["stopped"]
    assert all(m in {i.id for i in arithmetic(N, 0).items} for m in stored["missing"])


async def _decide(cli: Cli, env: dict[str, str], *more: str) -> dict[str, Any]:
    """Three consensus debates by `eval`, then what the oversight commands and `list` say."""
    ask = ("eval", "--builtin", "decisions", "--n", "3", "--modes", "consensus", "--json",
           "--yes", *more)
    done = await _cli(cli, env, *ask)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _json(done)["id"]
    listed = (await _cli(cli, env, "list")).stdout
    debate = next(line.split()[0] for line in listed.splitlines() if "consensus" in line)
    routing = _json(await _cli(cli, env, "thresholds", "show", "--json"))["routing"]
    return {"run": run, "listed": listed,
            "shown": (await _cli(cli, env, "show", debate)).stdout,
            "reviews": (await _cli(cli, env, "reviews", "list")).stdout,
            "judged": _json(await _cli(cli, env, "judges", "report", "--json"))["debates"],
            "routed": sum(sum(p["routing"]["results"].values()) for p in routing["presets"])}


async def test_eval_debates_are_labelled_and_stay_out_of_oversight_unless_review_asks(
        cli: Cli, tmp_path: Path) -> None:
    """With every published result spot-checked, the old code put each evaluation debate in the
    review queue, the judge audit and the routing statistics, unlabelled on `list`."""
    async with FakeOpenAI() as fake:
        Knowing({i.question: i.answer for i in decisions().items}, p=1.0).install(fake)
        every = {"DIALECTIC_SPOT_CHECK_FRACTION": "1"}
        own = await _decide(cli, _env(fake, tmp_path / "own.db", **every))
        assert "nothing waits for a reviewer" in own["reviews"]
        assert own["judged"] == 0 and own["routed"] == 0
        assert own["listed"].count(f"evaluation {own['run']}") == 3
        assert f"evaluation {own['run']}" in own["shown"]
        counted = await _decide(cli, _env(fake, tmp_path / "counted.db", **every), "--review")
    assert counted["listed"].count(f"evaluation {counted['run']}") == 3
    assert "nothing waits for a reviewer" not in counted["reviews"]
    assert counted["judged"] == 3 and counted["routed"] == 3
