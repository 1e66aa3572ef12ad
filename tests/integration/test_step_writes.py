"""One write per step: a step's checkpoint, what its reply billed and its audit link commit in one
transaction (bot/service/step_writes.py), and a process that dies between a reply and that commit
leaves none of them, so the resumed debate makes the call again and charges it once."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import timedelta
from pathlib import Path

from engine.domain import DebateRequest, utcnow
from storage import audit, budget, steps
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.support.service_fixtures import priced, running_worker, service, wait_done
from tests.support.sql_capture import Committed, committed

TOPIC = "Should we move billing to PostgreSQL?"
ROOT = Path(__file__).resolve().parents[2]
API = Origin(surface="api")


async def _simple_debate(db: Database) -> tuple[str, list[Committed]]:
    """A simple debate run by a worker to its end; the transactions committed meanwhile."""
    svc = service(db, priced(daily_budget_usd=1000.0))
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    with committed(db) as transactions:
        async with running_worker(svc, concurrency=1):
            record = await wait_done(svc, sub.record.id)
    assert record.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
    return sub.record.id, transactions


async def test_a_steps_checkpoint_charge_and_audit_link_commit_in_one_transaction(
        db: Database) -> None:
    debate_id, transactions = await _simple_debate(db)
    async with db.transaction(readonly=True) as session:
        stored = await steps.list_steps(session, debate_id)
        assert (await audit.verify(session, debate_id)).ok
    paid = [s for s in stored if s.calls > 0 and s.cost_usd > 0]
    assert len(paid) == len(stored) >= 5
    step_transactions = 0
    for tx in transactions:
        own = [r for r in tx.rows["steps"] if r["debate_id"] == debate_id]
        settled = sum(r["amount_usd"] for r in tx.rows["budget_ledger"]
                      if r["debate_id"] == debate_id and r["kind"] == budget.SETTLE)
        if not own:
            # the finish books only what no step did (nothing: every reply was charged with
            # its step); no other transaction charges the debate
            assert settled < 1e-6, tx.rows
            continue
        step_transactions += 1
        finished = {r["data"]["key"] for r in tx.rows["audit_events"]
                    if r["chain"] == debate_id and r["kind"] == "step_finished"}
        assert finished == {r["key"] for r in own}
        assert abs(settled - sum(r["cost_usd"] for r in own)) < 1e-9
    assert {r["key"] for tx in transactions for r in tx.rows["steps"]
            if r["debate_id"] == debate_id} == {s.key for s in paid}
    # one transaction per step, or fewer: the two sides of a round may share one
    assert len(paid) / 2 <= step_transactions <= len(paid)


async def test_a_kill_between_a_reply_and_its_commit_replays_the_step_and_charges_it_once(
        db: Database) -> None:
    """A worker process SIGKILLs itself as a step's write reaches the database, after the reply
    arrived (tests/support/doomed_worker.py): nothing of that write, nor after it, is committed.
    Another worker resumes the debate once the lease runs out."""
    target = "simple/rebuttal/1/con"
    sub = await service(db, priced(daily_budget_usd=1000.0)).submit(
        DebateRequest(topic=TOPIC, mode="simple"), origin=API)
    debate_id = sub.record.id
    doomed = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.doomed_worker",
        db.url.render_as_string(hide_password=False), target,
        cwd=str(ROOT), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        _, err = await asyncio.wait_for(doomed.communicate(), 90)
    finally:
        if doomed.returncode is None:
            doomed.kill()
            await doomed.wait()
    assert doomed.returncode == -signal.SIGKILL, err.decode()[-2000:]
    async with db.transaction(readonly=True) as session:
        before = {s.key for s in await steps.list_steps(session, debate_id)}
        charged_before = await budget.spent(session, debate_id)
    assert target not in before and before, before

    second = service(db, priced(daily_budget_usd=1000.0))
    second.clock = lambda: utcnow() + timedelta(seconds=120)   # the first's lease ran out
    async with running_worker(second, concurrency=1):
        record = await wait_done(second, debate_id)
    assert record.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
    assert record.attempts == 2
    async with db.transaction(readonly=True) as session:
        stored = await steps.list_steps(session, debate_id)
        report = await audit.verify(session, debate_id)
        links = await audit.events(session, debate_id)
        charged = await budget.spent(session, debate_id)
    keys = [s.key for s in stored]
    assert len(keys) == len(set(keys)) and target in keys and before < set(keys)
    assert report.ok, report.first_broken
    assert [e.data["key"] for e in links if e.kind == "step_finished"].count(target) == 1
    # what was charged before the kill is the steps stored before it, and every reply is charged
    # once: the ledger's spend is the stored steps' cost, which is the debate's
    cost_before = sum(s.cost_usd for s in stored if s.key in before)
    assert abs(charged_before - cost_before) < 1e-9
    assert abs(charged - sum(s.cost_usd for s in stored)) < 1e-9
    assert abs(charged - record.cost_usd) < 1e-6


async def test_a_phase_boundary_is_one_write_to_the_chain_in_order(db: Database) -> None:
    """A phase's end (and a round's) goes with the next event (engine/core/held_events.py): the
    last phase finished and the next started are one transaction; the chain keeps their order
    and loses none (every started phase finishes, the last with the debate's end)."""
    debate_id, transactions = await _simple_debate(db)
    async with db.transaction(readonly=True) as session:
        assert (await audit.verify(session, debate_id)).ok
        chain = [e.kind for e in await audit.events(session, debate_id)]
    started = [k for k in chain if k == "phase_started"]
    assert len(started) == chain.count("phase_finished") >= 3
    # in the chain: each phase's end comes before the next start, and the last before the end
    opened = 0
    for kind in chain:
        if kind == "phase_started":
            assert opened == 0, chain
            opened = 1
        elif kind == "phase_finished":
            assert opened == 1, chain
            opened = 0
    last_end = len(chain) - 1 - chain[::-1].index("phase_finished")
    assert opened == 0 and last_end < chain.index("debate_finished")
    ends = 0
    for tx in transactions:
        kinds = [r["kind"] for r in tx.rows["audit_events"] if r["chain"] == debate_id]
        if "phase_finished" in kinds:
            ends += kinds.count("phase_finished")
            after = kinds[kinds.index("phase_finished") + 1:]
            assert after and after[0] in ("phase_started", "debate_finished"), kinds
    assert ends == len(started)
