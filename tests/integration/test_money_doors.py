"""Every door passes the same cap, as users meet it: `dialectic run` in a terminal (configured by
real environment variables, the default database in the data directory) is refused over its
ceiling or the day's cap before anything is spent, with the server's own words; a run the money
runs out on is stopped by the purse and recorded in the ledger `/api/budget` reads; `dialectic
estimate` says the server would refuse; a re-run asked for from a rehearsal shell (estimate $0)
is re-admitted by the worker that runs it, with that worker's provider and prices."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from bot.service.terminal import run_here
from engine.domain import DebateRequest
from storage import audit, budget, debates, outbox
from storage.db import Database
from storage.records import DebateStatus, Origin, ReviewStatus
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_budget_enforcement import TOPIC
from tests.integration.test_cli_reviews import pending_review
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings, running_worker, service, wait_done
from tests.support.storage_fixtures import db

__all__ = ["clean_env", "cli", "db"]  # fixtures


def provider(fake: FakeOpenAI, **env: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": TEST_API_KEY, "OPENAI_BASE_URL": fake.base_url, **env}


def default_database(tmp_path: Path) -> Database:
    """The database a new user's `dialectic run` stores into (DATABASE_URL unset)."""
    return Database(f"sqlite+aiosqlite:///{tmp_path / 'xdg-data' / 'dialectic' / 'dialectic.db'}")


async def _today(db: Database) -> budget.BudgetState:
    async with db.transaction(readonly=True) as session:
        return await budget.state(session, datetime.now(UTC).date())


async def test_a_run_over_its_ceiling_is_refused_in_the_servers_words_before_any_call(
        cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        done = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "simple", "--json",
                                       env=provider(fake, DIALECTIC_MAX_DEBATE_USD="0.001"))
        estimated = await asyncio.to_thread(cli, "estimate", TOPIC, "--mode", "simple",
                                            env=provider(fake, DIALECTIC_MAX_DEBATE_USD="0.001"))
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: this debate may cost up to $")
    assert line.endswith("above the per-debate ceiling of $0.001 (DIALECTIC_MAX_DEBATE_USD)")
    assert fake.requests == []   # nothing was spent
    assert estimated.returncode == 1
    said = " ".join(estimated.stdout.split())
    assert f"The server would refuse it now: {line.removeprefix('error: ')}" in said


async def test_a_run_on_a_day_over_its_cap_is_refused_and_nothing_is_spent(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        first = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "simple", "--json",
                                        env=provider(fake))
        spent = len(fake.requests)
        env = provider(fake, DIALECTIC_DAILY_BUDGET_USD="0.001")   # today is already past it
        done = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "simple", env=env)
        estimated = await asyncio.to_thread(cli, "estimate", TOPIC, "--mode", "simple",
                                            "--json", env=env)
    assert first.returncode == 0 and spent > 0
    assert done.returncode == 1
    (line,) = done.stdout.strip().splitlines()
    assert line.startswith("error: today's budget has $0.000 of $0.001 left; this debate "
                           "needs about $")
    assert len(fake.requests) == spent   # nothing more was spent
    found = json.loads(estimated.stdout)
    assert found["admitted"] is False and estimated.returncode == 1
    assert found["admission"].startswith("the server would refuse it now: today's budget has")


async def test_a_run_the_money_runs_out_on_is_stopped_and_recorded_in_the_ledger(
        cli: Cli, tmp_path: Path) -> None:
    """Admitted (its verbose estimate fits), then its replies run far longer: the purse stops
    it before the day's cap, and the ledger, the stored debate and `/api/budget`'s figures all
    say what it spent."""
    async with FakeOpenAI(verbosity=6000) as fake:
        quoted = await asyncio.to_thread(cli, "estimate", TOPIC, "--mode", "simple",
                                         "--rounds", "3", "--json", env=provider(fake))
        cap = round(json.loads(quoted.stdout)["usd_high"] * 1.05, 6)
        env = provider(fake, DIALECTIC_DAILY_BUDGET_USD=str(cap))
        done = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "simple", "--rounds", "3",
                                       "--json", env=env)
    result = json.loads(done.stdout)
    assert done.returncode == 3, done.stderr   # completed, with parts missing
    assert result["missing"][0].startswith("budget exhausted after phase opening")
    db = default_database(tmp_path)
    try:
        state = await _today(db)
        async with db.transaction(readonly=True) as session:
            record = await debates.get(session, result["id"])
        svc = service(db, rehearsal_settings(daily_budget_usd=cap))
        api_budget = await svc.budget_today()   # what GET /api/budget answers
    finally:
        await db.dispose()
    assert record.origin.surface == "terminal" and record.status is DebateStatus.COMPLETED
    assert record.cost_usd > 0 and record.cost_usd == pytest.approx(result["cost"]["usd"])
    assert state.spent_usd == pytest.approx(record.cost_usd, abs=1e-6)
    assert state.spent_usd <= cap and state.reserved_usd == 0
    assert api_budget["spent_usd"] == pytest.approx(state.spent_usd)


async def test_a_terminal_run_is_stored_and_a_serve_worker_never_takes_it(
        cli: Cli, tmp_path: Path) -> None:
    """The run is claimed in the transaction that queues it: a worker polling the same
    database the whole time claims nothing; the debate is listed afterwards."""
    db = default_database(tmp_path)
    await db.upgrade()
    worker_svc = service(db, rehearsal_settings(poll_interval=0.01))
    try:
        async with FakeOpenAI(latency=0.05) as fake, running_worker(worker_svc, concurrency=2):
            done = await asyncio.to_thread(cli, "run", TOPIC, "--mode", "simple", "--json",
                                           env=provider(fake))
        listed = await asyncio.to_thread(cli, "list")
        async with db.transaction(readonly=True) as session:
            record = await debates.get(session, json.loads(done.stdout)["id"])
            claimed = [e.actor for e in await audit.events(session, record.id)
                       if e.kind == "claimed"]
    finally:
        await db.dispose()
    assert done.returncode == 0, done.stderr
    assert record.id in listed.stdout and record.origin.surface == "terminal"
    assert "from the terminal" in next(line for line in listed.stdout.splitlines()
                                       if record.id in line)
    assert len(claimed) == 1 and claimed[0].startswith("terminal:")


async def test_a_rerun_asked_for_from_a_rehearsal_shell_is_priced_by_the_worker_that_runs_it(
        cli: Cli, tmp_path: Path) -> None:
    url, db, rt, review = await pending_review(tmp_path)
    await rt.service.aclose()
    try:
        rehearsal_shell = {"DATABASE_URL": url, "DIALECTIC_REVIEWERS": "UREV"}
        done = await asyncio.to_thread(cli, "reviews", "decide", review.id, "rerun", "--as",
                                       "UREV", env=rehearsal_shell)
        assert done.returncode == 0, done.stdout
        rerun_id = done.stdout.split("re-run ", 1)[1].split()[0]
        async with FakeOpenAI() as fake:
            server = rehearsal_settings(openai_api_key=TEST_API_KEY, rehearsal=False,
                                        openai_base_url=fake.base_url, database_url=url)
            svc = service(db, server)
            async with running_worker(svc):
                record = await wait_done(svc, rerun_id, timeout=60)
            await svc.aclose()
        async with db.transaction(readonly=True) as session:
            held = [e for e in await budget.ledger(session, day=datetime.now(UTC).date(),
                                                   debate_id=rerun_id) if e.kind == "reserve"]
    finally:
        await db.dispose()
    assert record.result is not None and fake.answered() > 0
    assert not any("budget exhausted" in m for m in record.result.missing), record.result.missing
    assert record.cost_usd > 0 and sum(e.amount_usd for e in held) >= record.cost_usd


async def test_a_worker_without_room_for_a_rerun_fails_it_before_any_call(
        cli: Cli, tmp_path: Path) -> None:
    _, db, rt, review = await pending_review(tmp_path)
    await rt.service.aclose()
    try:
        sub = await rt.reviews.rerun(
            await rt.reviews.decide(review.id, ReviewStatus.RERUN, by="UREV", surface="cli"),
            origin=Origin(surface="cli", user_id="UREV"))
        async with FakeOpenAI() as fake:
            server = rehearsal_settings(openai_api_key=TEST_API_KEY, rehearsal=False,
                                        openai_base_url=fake.base_url, daily_budget_usd=0.0001)
            svc = service(db, server)
            async with running_worker(svc):
                record = await wait_done(svc, sub.record.id, timeout=60)
            await svc.aclose()
        state = await _today(db)
    finally:
        await db.dispose()
    assert record.status is DebateStatus.FAILED and fake.requests == []
    assert record.error.startswith("refused by the worker that claimed it: today's budget has")
    assert state.reserved_usd == 0 and state.spent_usd == 0



async def test_the_api_estimate_says_what_the_servers_402_and_the_terminal_say(
        cli: Cli, tmp_path: Path) -> None:
    """One rule, every surface: over the per-debate ceiling, `/api/estimate` says the server
    would refuse in the words `POST /api/debates` answers 402 with, and `dialectic estimate`
    prints the same sentence."""
    async with FakeOpenAI() as fake:
        env = provider(fake, DIALECTIC_MAX_DEBATE_USD="0.001")
        said = await asyncio.to_thread(cli, "estimate", TOPIC, "--mode", "simple", "--json",
                                       env=env)
        db = default_database(tmp_path)
        await db.upgrade()
        settings = rehearsal_settings(rehearsal=False, openai_api_key=TEST_API_KEY,
                                      openai_base_url=fake.base_url, max_debate_usd=0.001)
        try:
            async with served(db, settings) as (base, rt, _), aiohttp.ClientSession() as s:
                status, est = await call(s, "POST", f"{base}/api/estimate",
                                         json={"topic": TOPIC, "mode": "simple"})
                refused, reply = await call(s, "POST", f"{base}/api/debates",
                                            json={"topic": TOPIC, "mode": "simple"})
                await rt.service.aclose()
        finally:
            await db.dispose()
    assert status == 200 and est["admitted"] is False
    assert refused == 402 and est["admission"] == f"the server would refuse it now: " \
        f"{reply['error']}"
    assert json.loads(said.stdout)["admission"] == est["admission"]
    assert fake.requests == []


async def test_a_debate_claimed_at_submit_is_never_seen_queued(db: Database) -> None:
    """On SQLite and PostgreSQL: the terminal's claim is taken in the transaction that queues
    the debate, so a worker polling all along claims nothing, and running it here keeps the
    lease until it is stored."""
    # a loaded machine stalls for tenths of a second: a shorter lease is lost (the next test)
    svc = service(db, rehearsal_settings(poll_interval=0.01, lease_seconds=1.5))
    async with running_worker(svc, concurrency=2, worker_id="serve-worker"):
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"),
                               origin=Origin(surface="terminal"), claim="terminal:test")
        assert sub.record.status is DebateStatus.DEBATING
        assert sub.record.lease_owner == "terminal:test"
        record = await run_here(svc, sub.record, worker_id="terminal:test")
    async with db.transaction(readonly=True) as session:
        claimed = [e.actor for e in await audit.events(session, record.id)
                   if e.kind in ("claimed", "reclaimed")]
    await svc.aclose()
    assert record.status is DebateStatus.COMPLETED and record.result is not None
    assert claimed == ["terminal:test"]


async def test_a_terminal_run_routed_to_a_reviewer_owes_slack_its_review_request(
        cli: Cli, tmp_path: Path) -> None:
    """One path for every door: with Slack configured, a debate run in the terminal that the
    judges cannot agree on owes the review channel its request, in the outbox, for a `serve`
    or `worker` to deliver (the terminal itself posts nothing)."""
    config = tmp_path / "dialectic.toml"
    config.write_text('[presets.strict]\nmode = "consensus"\n'
                      'thresholds = { high = 1.0, tentative = 1.0, escalate = 0.0 }\n')
    db = default_database(tmp_path)
    try:
        async with FakeOpenAI() as fake:
            done = await asyncio.to_thread(
                cli, "run", TOPIC, "--preset", "strict", "--json", env=provider(
                    fake, DIALECTIC_CONFIG=str(config), SLACK_BOT_TOKEN="xoxb-test",
                    SLACK_SIGNING_SECRET="secret", DIALECTIC_REVIEW_CHANNEL="CREVIEW"))
        assert done.returncode == 0, done.stderr
        debate_id = json.loads(done.stdout)["id"]
        async with db.transaction(readonly=True) as session:
            record = await debates.get(session, debate_id)
            owed = await outbox.for_debate(session, debate_id)
    finally:
        await db.dispose()
    assert record.status is DebateStatus.AWAITING_REVIEW
    assert [(d.kind, d.status) for d in owed] == [("review_request", "pending")]


async def test_a_terminal_that_loses_its_lease_follows_the_worker_that_took_over(
        db: Database) -> None:
    """A terminal run that stalls past its lease (here: its first event waits until the lease
    has run out and a worker has taken the debate) stops its copy and returns the worker's
    result; it never records the debate failed under the worker that now runs it."""
    svc = service(db, rehearsal_settings(poll_interval=0.01, lease_seconds=0.5))
    taken = asyncio.Event()

    class Stalls:
        async def emit(self, event: object) -> None:
            if not taken.is_set():
                await taken.wait()

    async with running_worker(svc, concurrency=2, worker_id="serve-worker"):
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"),
                               origin=Origin(surface="terminal"), claim="terminal:test")

        async def take_over() -> None:
            async with db.transaction() as session:   # the terminal's lease runs out
                row = await session.get(debates.DebateRow, sub.record.id)
                assert row is not None
                row.lease_expires_at = datetime(2000, 1, 1, tzinfo=UTC)

            async def claimed() -> bool:
                async with db.transaction(readonly=True) as session:
                    return (await debates.get(session, sub.record.id)).lease_owner == \
                        "serve-worker"

            while not await claimed():
                await asyncio.sleep(0.01)
            taken.set()

        mover = asyncio.ensure_future(take_over())
        record = await run_here(svc, sub.record, worker_id="terminal:test", sink=Stalls())
        await mover
    async with db.transaction(readonly=True) as session:
        events = await audit.events(session, record.id)
    await svc.aclose()
    assert record.status is DebateStatus.COMPLETED and record.result is not None
    assert [e.actor for e in events if e.kind in ("claimed", "reclaimed")] == \
        ["terminal:test", "serve-worker"]
    assert not [e for e in events if e.kind == "status_changed" and
                e.data.get("to") == DebateStatus.FAILED.value]
