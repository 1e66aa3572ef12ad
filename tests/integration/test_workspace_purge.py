"""An uninstall's data, kept or purged as configured (DIALECTIC_UNINSTALL_DATA), through the real
Bolt app, the fake Slack and real OAuth installs, on SQLite and PostgreSQL: two workspaces
installed and debating, one uninstalls; its tokens go, its unfinished debates are cancelled and
their holds released; with `purge` everything written for it is erased (the other workspace's and
the operator's untouched), the audit chains still verify, the erased chains are attested in the
global one, and the day's money still adds up. A purge cut short finishes on the next start."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.service import housekeeping, uninstalls
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from storage import audit, budget, purges, queue
from storage.lifecycle import CANCELLED_PREFIX
from storage.records import DebateRecord, DebateStatus, Origin
from storage.workspace_rows import WorkspaceScheduleRow
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_installs import Install
from tests.integration.test_slack_install import (
    T1,
    T2,
    command_from,
    home_opened,
    install,
    multi,
    rows,
)
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.slack_fixtures import Harness
from tests.support.storage_fixtures import BACKENDS, migrated_database

pytestmark = pytest.mark.integration
__all__ = ["clean_env", "cli"]  # fixtures

#: the tables a workspace's debates leave rows in (the budget ledger aside: money is kept)
CONTENT = ("debates", "steps", "reviews", "panels", "feedback", "deliveries", "slack_threads")


@asynccontextmanager
async def stack(backend: str, tmp_path: Path, teams: tuple[str, ...] = (T1, T2),
                latency: float = 0.0, **settings: Any) -> AsyncIterator[Harness]:
    """The multi-workspace stack on SQLite, or on a PostgreSQL database of its own, its
    debates argued by the fake OpenAI server (priced: real holds and spend), `teams`
    installed through "Add to Slack"."""
    async with FakeOpenAI(latency=latency) as openai, contextlib.AsyncExitStack() as stack:
        if backend == "postgresql":
            database = await stack.enter_async_context(migrated_database(backend, tmp_path))
            settings["database_url"] = database.url.render_as_string(hide_password=False)
        h = await stack.enter_async_context(multi(tmp_path, openai=openai, **settings))
        for team in teams:
            await install(h, Install(team))
        yield h


async def debate_in(h: Harness, team: str, topic: str) -> DebateRecord:
    before = {d.id for d in await h.debates()}
    reply = await h.send(command_from(h, team, topic), "application/x-www-form-urlencoded")
    assert reply.status == 200 and "Estimate" in reply.text, reply.text

    async def new() -> DebateRecord | None:
        return next((d for d in await h.debates() if d.id not in before), None)
    found = await h.wait_until(new, what=f"{team}'s debate")
    assert found.origin.team_id == team
    return found


async def schedule_in(h: Harness, team: str) -> None:
    """A schedule the workspace's admins defined (erased with its data, not the others')."""
    now = h.rt.service.clock()
    async with h.rt.db.transaction() as session:
        session.add(WorkspaceScheduleRow(
            id=f"sched-{team}", team_id=team, name="morning", preset="market",
            topics=["Rates this week?"], cron="0 8 * * 1-5", timezone="UTC", channel="CGENERAL",
            enabled=True, created_by="UADMIN", created_at=now, updated_by="UADMIN",
            updated_at=now))


async def operator_debate(h: Harness) -> DebateRecord:
    submitted = await h.rt.service.submit(
        DebateRequest(topic="An operator question nobody in Slack sees", mode="simple",
                      requested_by="ops"), origin=Origin(surface="api"))
    return submitted.record


async def uninstall(h: Harness, team: str) -> None:
    body = json.loads(home_opened(team))
    body["event"] = {"type": "app_uninstalled"}
    body["event_id"] = f"EvUninstall{team}"
    assert (await h.send(json.dumps(body), "application/json")).status == 200


async def owned(h: Harness, table: str, debate_ids: set[str]) -> int:
    key = "id" if table == "debates" else "debate_id"
    return sum(1 for r in await rows(h, table) if r[key] in debate_ids)


async def chain_of(h: Harness, debate_id: str) -> list[dict[str, Any]]:
    return sorted((r for r in await rows(h, "audit_events") if r["chain"] == debate_id),
                  key=lambda r: r["seq"])


async def global_links(h: Harness, kind: str) -> list[dict[str, Any]]:
    """The global chain's links of `kind`, their data decoded (raw SQLite gives JSON text)."""
    return [{**r, "data": json.loads(r["data"]) if isinstance(r["data"], str) else r["data"]}
            for r in await rows(h, "audit_events")
            if r["chain"] == audit.GLOBAL_CHAIN and r["kind"] == kind]


async def books(h: Harness) -> list[tuple[Any, float, float, float, float]]:
    """Each day's (reserved, spent) as stored and as the ledger's sums."""
    ledger = await rows(h, "budget_ledger")
    found = []
    for day in await rows(h, "budget_days"):
        mine = [e for e in ledger if e["day"] == day["day"]]
        reserve = sum(e["amount_usd"] for e in mine if e["kind"] == "reserve")
        release = sum(e["amount_usd"] for e in mine if e["kind"] == "release")
        settle = sum(e["amount_usd"] for e in mine if e["kind"] == "settle")
        found.append((day["day"], round(day["reserved_usd"], 6), round(day["spent_usd"], 6),
                      round(reserve - release, 6), round(settle, 6)))
    return found


async def verified(h: Harness) -> audit.VerifyReport:
    async with h.rt.db.transaction(readonly=True) as session:
        return await audit.verify(session)


async def purge_state(h: Harness, team: str) -> purges.Purge | None:
    async with h.rt.db.transaction(readonly=True) as session:
        return await purges.get(session, team)


async def purged(h: Harness, team: str) -> bool:
    state = await purge_state(h, team)
    return state is not None and state.status == purges.DONE


@pytest.mark.parametrize("backend", BACKENDS)
async def test_uninstall_with_keep_removes_the_tokens_and_keeps_the_data(
        backend: str, tmp_path: Path) -> None:
    async with stack(backend, tmp_path, workers=None) as h:
        mine = await debate_in(h, T1, "Should we adopt Kafka?")
        await h.wait_finished(mine.id)
        steps_before = await owned(h, "steps", {mine.id})
        await uninstall(h, T1)
        await h.wait_until(lambda: global_links(h, "workspace_uninstalled"), what="uninstall")
        assert [r["team_id"] for r in await rows(h, "slack_bots")] == [T2]
        assert await owned(h, "debates", {mine.id}) == 1
        assert await owned(h, "steps", {mine.id}) == steps_before > 0
        assert await chain_of(h, mine.id)
        link = (await global_links(h, "workspace_uninstalled"))[0]
        assert link["data"]["team_id"] == T1 and link["data"]["data"] == "keep"
        assert await purge_state(h, T1) is None
        assert (await verified(h)).ok


async def test_a_revoked_bot_token_stops_the_workspaces_work_like_an_uninstall(
        tmp_path: Path) -> None:
    async with stack("sqlite", tmp_path, workers=0) as h:
        queued = await debate_in(h, T1, "Should we adopt Kafka?")
        revoked = json.loads(home_opened(T1))
        revoked["event"] = {"type": "tokens_revoked", "tokens": {"bot": ["UBOTT1ONE"]}}
        revoked["event_id"] = "EvRevokedT1"
        assert (await h.send(json.dumps(revoked), "application/json")).status == 200
        await h.wait_until(lambda: global_links(h, "workspace_uninstalled"), what="revocation")
        record = await h.rt.service.get(queued.id)
        assert record.status is DebateStatus.FAILED and record.error.startswith(CANCELLED_PREFIX)
        with pytest.raises(InvalidRequest, match="cannot be retried"):
            await h.rt.service.retry(queued.id, actor="cli")
        user_only = json.loads(home_opened(T2))
        user_only["event"] = {"type": "tokens_revoked", "tokens": {"oauth": ["UALICE"]}}
        user_only["event_id"] = "EvRevokedUser"
        await h.send(json.dumps(user_only), "application/json")
        await h.send(json.dumps({**json.loads(home_opened(T2)), "event_id": "EvAfter"}),
                     "application/json")
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="T2 still served")
        assert [r["data"]["team_id"] for r in await global_links(h, "workspace_uninstalled")] \
            == [T1]   # a user's token revoked: the workspace stays, and so does its work


@pytest.mark.parametrize("backend", BACKENDS)
async def test_uninstall_with_purge_erases_that_workspaces_data_only(
        backend: str, tmp_path: Path) -> None:
    async with stack(backend, tmp_path, workers=None, uninstall_data="purge") as h:
        gone = [await debate_in(h, T1, f"Should team one adopt tool {n}?") for n in (1, 2)]
        kept = await debate_in(h, T2, "Should team two adopt Kafka?")
        ours = await operator_debate(h)
        for record in (*gone, kept, ours):
            await h.wait_finished(record.id)
        await h.delivered()
        gone_ids = {d.id for d in gone}
        ends = {d: (await chain_of(h, d))[-1] for d in gone_ids}
        others = {kept.id, ours.id}
        before = {t: await owned(h, t, others) for t in CONTENT}
        other_links = {d: len(await chain_of(h, d)) for d in others}
        money = await books(h)
        assert all(day[1:3] == day[3:] for day in money)   # stored = the ledger's sums
        assert sum(day[2] for day in money) > 0             # real spend to keep counted

        await schedule_in(h, T1)
        await schedule_in(h, T2)
        await uninstall(h, T1)
        await h.wait_until(lambda: purged(h, T1), what="T1's purge")
        assert [r["team_id"] for r in await rows(h, "workspace_schedules")] == [T2]
        for table in CONTENT:
            assert await owned(h, table, gone_ids) == 0, table
            assert await owned(h, table, others) == before[table], table
        assert not [r for r in await rows(h, "audit_events") if r["chain"] in gone_ids]
        assert {d: len(await chain_of(h, d)) for d in others} == other_links
        assert [r["team_id"] for r in await rows(h, "slack_bots")] == [T2]
        assert (await verified(h)).ok
        attested: dict[str, Any] = {}
        for link in await global_links(h, "workspace_purge_batch"):
            assert link["data"]["team_id"] == T1
            attested.update(link["data"]["chains"])
        assert attested == {d: {"links": end["seq"], "last_hash": end["hash"]}
                            for d, end in ends.items()}
        done = (await global_links(h, "workspace_purged"))[0]["data"]
        assert done["team_id"] == T1 and done["rows"]["debates"] == 2
        assert await books(h) == money     # content erased, money kept: the day adds up
        ledger_ids = {e["debate_id"] for e in await rows(h, "budget_ledger")}
        assert gone_ids <= ledger_ids


@pytest.mark.parametrize("backend", BACKENDS)
async def test_running_and_queued_debates_are_cancelled_and_their_holds_released(
        backend: str, tmp_path: Path) -> None:
    async with stack(backend, tmp_path, workers=0) as h:
        running = await debate_in(h, T1, "Should we adopt Kafka?")
        queued = await debate_in(h, T1, "Should we adopt Pulsar?")
        other = await debate_in(h, T2, "Should we adopt NATS?")
        now = h.rt.service.clock()
        async with h.rt.db.transaction() as session:
            taken = await queue.claim_one(session, running.id, worker_id="w-elsewhere",
                                          lease_seconds=30, now=now)
            assert taken is not None and taken.status is DebateStatus.DEBATING
            held = {d: await budget.held(session, d) for d in (running.id, queued.id)}
            day = await budget.state(session, now.date())
        assert all(v > 0 for v in held.values())

        await uninstall(h, T1)
        await h.wait_until(lambda: global_links(h, "workspace_uninstalled"), what="uninstall")

        async with h.rt.db.transaction(readonly=True) as session:
            for debate_id in (running.id, queued.id):
                record = await h.rt.service.get(debate_id)
                assert record.status is DebateStatus.FAILED
                assert record.error.startswith(CANCELLED_PREFIX)
                assert await budget.held(session, debate_id) == 0
            after = await budget.state(session, now.date())
            # the worker running it learns at its next renewal that it must stop its copy
            lost = await queue.taken_elsewhere(session, debate_ids=[running.id],
                                               worker_id="w-elsewhere")
        assert lost == {running.id}
        assert after.reserved_usd == pytest.approx(day.reserved_usd - sum(held.values()))
        assert after.spent_usd == day.spent_usd
        assert (await h.rt.service.get(other.id)).status is DebateStatus.QUEUED
        link = (await global_links(h, "workspace_uninstalled"))[0]["data"]
        assert sorted(link["cancelled"]) == sorted([running.id, queued.id])
        assert link["released_usd"] == pytest.approx(sum(held.values()))
        assert all(a[1:3] == a[3:] for a in await books(h))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_worker_stops_the_running_debate_of_a_workspace_that_left_and_it_is_erased(
        backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A real worker runs a T1 debate (each model call 0.5 s); T1 uninstalls with purge: the
    debate is cancelled, the worker stops its copy at its next renewal, and the uninstall
    erases it once the lease is over; the spend of the replies it got stays counted."""
    async with stack(backend, tmp_path, latency=0.5, workers=None, uninstall_data="purge",
                     lease_seconds=1.0) as h:
        running = await debate_in(h, T1, "Should we adopt Kafka?")

        async def debating() -> bool:   # running, and some replies in (and paid for)
            return ((await h.rt.service.get(running.id)).status is DebateStatus.DEBATING
                    and await owned(h, "steps", {running.id}) > 0)
        await h.wait_until(debating, what="the debate to run")
        await uninstall(h, T1)
        await h.wait_until(lambda: purged(h, T1), what="T1's purge", timeout=20)
        link = (await global_links(h, "workspace_uninstalled"))[0]["data"]
        assert link["cancelled"] == [running.id]
        assert f"debate {running.id} interrupted" in caplog.text   # the worker stopped it
        assert "crashed" not in caplog.text
        assert await owned(h, "debates", {running.id}) == 0
        assert not await chain_of(h, running.id)
        assert (await verified(h)).ok
        assert all(day[1:3] == day[3:] for day in await books(h))
        assert sum(e["amount_usd"] for e in await rows(h, "budget_ledger")
                   if e["debate_id"] == running.id and e["kind"] == "settle") > 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_purge_cut_short_is_finished_by_the_next_start(
        backend: str, tmp_path: Path) -> None:
    async with stack(backend, tmp_path, workers=None) as h:
        gone = [await debate_in(h, T1, f"Should we adopt tool {n}?") for n in (1, 2, 3)]
        for record in gone:
            await h.wait_finished(record.id)
        # the operator's purge (the installed workspace: --force), as far as its first batch
        # before the process died: the purge is recorded, one debate is erased and attested
        clock = h.rt.service.clock
        with pytest.raises(InvalidRequest, match="installed"):
            await uninstalls.request_purge(h.rt.db, T1, reason="customer asked", actor="cli",
                                           clock=clock)
        async with h.rt.db.transaction() as session:
            await purges.begin(session, team_id=T1, reason="customer asked", requested_by="cli",
                               now=clock())
        assert await uninstalls.purge_batch(h.rt.db, T1, clock=clock, limit=1) == 1
        assert (await purge_state(h, T1)).status == purges.RUNNING   # type: ignore[union-attr]
        assert sum([await owned(h, "debates", {d.id}) for d in gone]) == 2
        assert (await verified(h)).ok

        erased = await housekeeping.unfinished_purges(h.rt)   # what a restart runs first
        assert erased and (await purge_state(h, T1)).status == purges.DONE  # type: ignore[union-attr]
        assert sum([await owned(h, "debates", {d.id}) for d in gone]) == 0
        assert (await verified(h)).ok
        assert await housekeeping.unfinished_purges(h.rt) == {}   # idempotent: nothing left
        batches = await global_links(h, "workspace_purge_batch")
        assert sorted(c for b in batches for c in b["data"]["chains"]) == sorted(
            d.id for d in gone)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_running_debate_is_erased_once_its_lease_is_over(
        backend: str, tmp_path: Path) -> None:
    async with stack(backend, tmp_path, teams=(T1,), workers=0) as h:
        running = await debate_in(h, T1, "Should we adopt Kafka?")
        now = h.rt.service.clock()
        async with h.rt.db.transaction() as session:
            assert await queue.claim_one(session, running.id, worker_id="w-elsewhere",
                                         lease_seconds=30, now=now)
        report = await uninstalls.request_purge(h.rt.db, T1, reason="contract ended",
                                                actor="cli", clock=lambda: now, force=True)
        assert not report.done and report.waiting == 1
        assert await owned(h, "debates", {running.id}) == 1
        later = now + timedelta(seconds=31)
        finished = await uninstalls.purge(h.rt.db, T1, clock=lambda: later)
        assert finished.done and finished.counts["debates"] == 1
        assert await owned(h, "debates", {running.id}) == 0
        assert (await verified(h)).ok


@pytest.mark.parametrize("reason", ["", "   ", "\u200b", "\u200b\u2060 "])
async def test_a_purge_needs_a_visible_reason_and_changes_nothing_without(
        tmp_path: Path, reason: str) -> None:
    async with multi(tmp_path) as h:
        with pytest.raises(InvalidRequest, match="visible text"):
            await uninstalls.request_purge(h.rt.db, T1, reason=reason, actor="cli",
                                           clock=h.rt.service.clock)
        with pytest.raises(InvalidRequest, match="team id"):
            await uninstalls.request_purge(h.rt.db, "'; DROP", reason="x", actor="cli",
                                           clock=h.rt.service.clock)
        assert await rows(h, "workspace_purges") == []
        assert await rows(h, "audit_events") == []


def test_the_command_refuses_a_blank_reason_in_one_line_and_dry_runs_count(
        cli: Cli, tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/cli.db"}
    assert cli("db", "upgrade", env=env).returncode == 0
    refused = cli("workspaces", "purge", "T0123ABC", "--reason", "\u200b", env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    said = (refused.stdout + refused.stderr).strip()
    assert "visible text" in said and len(said.splitlines()) == 1, said
    counted = cli("workspaces", "purge", "T0123ABC", "--dry-run", env=env)
    assert counted.returncode == 0, counted.stderr
    assert "dry run, nothing erased" in counted.stdout and "0 debates" in counted.stdout
    done = cli("workspaces", "purge", "T0123ABC", "--reason", "contract ended", env=env)
    assert done.returncode == 0 and "purged" in done.stdout, done.stderr
