"""The scheduler against real databases, the rehearsal model, a worker and the fake Slack.

The schedule's clock is injected (nothing waits for real minutes); debates really run through
the durable queue. Two runtimes over one database stand in for two replicas.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import text

from bot.assembly import Assembly, assembled, web_app
from bot.scheduling.reports import ALREADY_CLAIMED
from bot.scheduling.scheduler import CalendarTrigger, Scheduler
from bot.service import workspace_settings as ws
from bot.service.runtime import Runtime
from bot.settings import Settings, load_settings
from bot.slack.notifier import SlackNotifier
from bot.slack.pacing import ChannelPacer
from bot.slack.publisher import SlackPublisher
from bot.slack.settings import SlackSettings
from engine.domain import utcnow
from engine.errors import ConfigurationError
from storage import audit
from storage import schedules as runs
from storage.db import Database
from storage.records import DebateStatus, RunStatus
from tests.fakes.slack_server import FakeSlack
from tests.support.service_fixtures import priced, rehearsal_settings, running_worker, runtime
from tests.support.slack_fixtures import harness_settings
from tests.support.storage_fixtures import BACKENDS, migrated_database

CHANNEL = "C0MARKETS"
MORNING: dict[str, Any] = {
    "id": "morning", "cron": "0 8 * * 1-5", "timezone": "Europe/Paris", "channel": CHANNEL,
    "topics": ["Brent crude breaks $90", "The ECB cuts rates in June"]}
MONDAY_SLOT = "2024-05-06T06:00:00Z"          # Monday 08:00 in Paris


def utc(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


class Clock:
    """The scheduler's clock, set by the test."""

    def __init__(self, now: str) -> None:
        self.now = utc(now)

    def __call__(self) -> datetime:
        return self.now

    def set(self, now: str) -> None:
        self.now = utc(now)


@dataclass
class Replica:
    rt: Runtime
    scheduler: Scheduler
    clock: Clock


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as slack:
        yield slack


@asynccontextmanager
async def replica(db: Database, fake: FakeSlack | None, *, now: str = "2024-05-06T06:00:04",
                  settings: Callable[..., Settings] = rehearsal_settings,
                  schedules: tuple[dict[str, Any], ...] = (MORNING,),
                  worker: bool = True) -> AsyncIterator[Replica]:
    """One process's runtime over `db`: service, a background worker, a scheduler posting to
    the fake Slack through the real notifier and publisher."""
    built = settings(schedules=schedules, timezone="Europe/Paris",
                     public_url="http://dialectic.test")
    rt = runtime(db, built)
    notifier = None
    if fake is not None:
        slack = SlackSettings(slack_bot_token="xoxb-test", slack_api_url=fake.base_url)
        notifier = SlackNotifier(rt, slack, AsyncWebClient(token="xoxb-test",
                                                           base_url=fake.base_url),
                                 ChannelPacer(0.0))
    clock = Clock(now)
    scheduler = Scheduler(rt, built.scheduling, clock=clock, wait_timeout=30.0,
                          publisher=SlackPublisher(notifier) if notifier else None)
    try:
        if worker:
            async with running_worker(rt.service) as running:
                rt.workers.append(running)
                yield Replica(rt, scheduler, clock)
        else:
            yield Replica(rt, scheduler, clock)
    finally:
        scheduler.shutdown()
        await asyncio.sleep(0)
        if notifier is not None:
            await notifier.close()


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[Database]:
    async with migrated_database("sqlite", tmp_path) as db:
        yield db


async def second_database(db: Database) -> Database:
    """Another engine over the same database (the same schema on PostgreSQL): a replica."""
    url = db.url.render_as_string(hide_password=False)
    if db.dialect == "sqlite":
        return Database(url)
    async with db.engine.connect() as connection:
        schema = (await connection.execute(text("SELECT current_schema()"))).scalar_one()
    return Database(url, connect_args={"server_settings": {"search_path": schema}})


def roots(fake: FakeSlack, channel: str = CHANNEL) -> list[dict[str, Any]]:
    """Channel-level messages (not thread replies)."""
    return [m for m in fake.messages(channel) if m.get("thread_ts") in (None, m["ts"])]


def blocks_text(message: dict[str, Any]) -> str:
    return json.dumps(message.get("blocks", []), ensure_ascii=False) + message.get("text", "")


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def run_rows(db: Database, schedule_id: str = "morning") -> dict[str, runs.ScheduledRun]:
    async with db.transaction() as session:
        return {r.slot: r for r in await runs.list_runs(session, schedule_id=schedule_id)}


async def until_ran(db: Database, slot: str) -> None:
    """Wait until the run of `slot` is done (fired by APScheduler, in the background)."""
    async with asyncio.timeout(20.0):
        while (run := (await run_rows(db)).get(slot)) is None or run.status != RunStatus.DONE:
            await asyncio.sleep(0.02)


async def seed_run(db: Database, slot: str, status: str = RunStatus.DONE) -> None:
    async with db.transaction() as session:
        assert await runs.claim_slot(session, schedule_id="morning", slot=slot)
        await runs.finish_slot(session, schedule_id="morning", slot=slot, status=status)


# --- firing -----------------------------------------------------------------------------------

async def test_a_cron_fires_at_its_slot_and_posts_one_digest(sqlite: Database,
                                                              fake: FakeSlack) -> None:
    async with replica(sqlite, fake, now="2024-05-06T06:00:04") as r:
        report = await r.scheduler.fire("morning")
    assert report is not None and report.status == RunStatus.DONE and report.slot == MONDAY_SLOT
    assert len(report.debate_ids) == 2
    (digest,) = roots(fake)
    assert digest["ts"] == report.message_ts
    assert "Brent crude breaks $90" in blocks_text(digest)
    assert "transcript" in blocks_text(digest) and "Total cost" in blocks_text(digest)
    assert len(fake.replies(CHANNEL, digest["ts"])) == 2          # details in the thread
    row = (await run_rows(sqlite))[MONDAY_SLOT]
    assert row.status == RunStatus.DONE and set(row.debate_ids) == set(report.debate_ids)
    assert row.detail["message_ts"] == digest["ts"] and row.detail["posted"] is True
    for debate_id in report.debate_ids:
        record = await r.rt.service.get(debate_id)
        assert record.origin.surface == "schedule" and record.origin.schedule_id == "morning"
        assert record.origin.channel_id == CHANNEL and record.preset == "market"
        assert record.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)


async def test_apscheduler_fires_the_configured_job_at_the_trigger_slot(
        sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake, now="2024-05-05T12:00:00") as r:   # a Sunday: nothing due
        aps = await r.scheduler.start()
        assert r.scheduler.aps is aps
        job = aps.get_job("morning")
        assert job is not None and job.coalesce is True and job.max_instances == 1
        assert job.misfire_grace_time == 3600
        assert isinstance(job.trigger, CalendarTrigger)      # the calendar `fire` reads
        assert job.trigger.calendar == r.scheduler.schedule("morning").calendar
        assert str(job.trigger.timezone) == "Europe/Paris"
        assert job.next_run_time.astimezone(job.trigger.timezone).hour == 8
        assert aps.get_job("catch-up:morning") is None
        r.clock.set("2024-05-06T06:00:02")       # the trigger's time has come
        aps.modify_job("morning", next_run_time=datetime.now(UTC))
        await until_ran(sqlite, MONDAY_SLOT)
        aps.shutdown(wait=False)
    assert list(await run_rows(sqlite)) == [MONDAY_SLOT]
    assert len(roots(fake)) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_two_replicas_firing_the_same_slot_produce_one_digest(
        backend: str, tmp_path: Path, fake: FakeSlack) -> None:
    async with migrated_database(backend, tmp_path) as first:
        other = await second_database(first)
        try:
            async with replica(first, fake) as a, replica(other, fake) as b:
                reports = await asyncio.gather(a.scheduler.fire("morning"),
                                               b.scheduler.fire("morning"))
                debates = await a.rt.service.recent()
        finally:
            await other.dispose()
        rows = await run_rows(first)
    assert sorted(r.status for r in reports if r) == [ALREADY_CLAIMED, RunStatus.DONE]
    assert len(roots(fake)) == 1
    assert list(rows) == [MONDAY_SLOT] and len(debates) == 2


# --- downtime ---------------------------------------------------------------------------------

async def test_a_missed_slot_within_grace_catches_up_once_on_start(
        sqlite: Database, fake: FakeSlack) -> None:
    await seed_run(sqlite, "2024-05-03T06:00:00Z")                   # Friday's ran
    async with replica(sqlite, fake, now="2024-05-06T06:40:00") as r:  # Monday, 40 min late
        aps = await r.scheduler.start()
        await until_ran(sqlite, MONDAY_SLOT)
        aps.shutdown(wait=False)
    async with replica(sqlite, fake, now="2024-05-06T06:45:00") as again:  # a second start
        assert await again.scheduler.catch_up() == []
    assert len(roots(fake)) == 1
    assert {s: r.status for s, r in (await run_rows(sqlite)).items()} == {
        "2024-05-03T06:00:00Z": RunStatus.DONE, MONDAY_SLOT: RunStatus.DONE}


async def test_older_missed_slots_are_reported_in_the_next_digest_not_run(
        sqlite: Database, fake: FakeSlack) -> None:
    await seed_run(sqlite, "2024-05-02T06:00:00Z")                      # Thursday's ran
    async with replica(sqlite, fake, now="2024-05-06T07:30:00") as r:  # 90 min late: too late
        assert await r.scheduler.catch_up() == []
        assert await r.rt.service.recent() == []                       # nothing was run
        rows = await run_rows(sqlite)
        assert rows["2024-05-03T06:00:00Z"].status == "missed"
        assert rows[MONDAY_SLOT].status == "missed"
        r.clock.set("2024-05-07T06:00:01")                             # Tuesday's digest
        tuesday = await r.scheduler.fire("morning")
        r.clock.set("2024-05-08T06:00:01")
        wednesday = await r.scheduler.fire("morning")
    assert tuesday is not None and tuesday.status == RunStatus.DONE
    first, second = roots(fake)
    assert "missed the 2024-05-03 06:00 UTC run" in blocks_text(first)
    assert "missed the 2024-05-06 06:00 UTC run" in blocks_text(first)
    assert "missed the" not in blocks_text(second)                      # reported once
    assert wednesday is not None and wednesday.status == RunStatus.DONE
    rows = await run_rows(sqlite)
    assert rows["2024-05-03T06:00:00Z"].detail["reported_in"] == tuesday.slot


async def test_a_run_whose_process_died_is_reported_once(sqlite: Database,
                                                         fake: FakeSlack) -> None:
    async with sqlite.transaction() as session:                       # claimed, never finished
        await runs.claim_slot(session, schedule_id="morning", slot="2024-05-03T06:00:00Z",
                              now=utc("2024-05-03T06:00:01"))
    async with replica(sqlite, fake) as r:
        monday = await r.scheduler.fire("morning")
        r.clock.set("2024-05-07T06:00:01")
        tuesday = await r.scheduler.fire("morning")
    assert monday is not None and tuesday is not None
    first, second = roots(fake)
    assert "2024-05-03 06:00 UTC run never finished" in blocks_text(first)
    assert "never finished" not in blocks_text(second)
    assert (await run_rows(sqlite))["2024-05-03T06:00:00Z"].status == "interrupted"


async def test_apscheduler_misfires_are_recorded_as_missed(sqlite: Database) -> None:
    async with replica(sqlite, None, worker=False) as r:
        r.scheduler._on_missed(JobExecutionEvent(EVENT_JOB_MISSED, "morning", "default",
                                                 utc("2024-05-06T06:00:00")))
        await until(lambda: not r.scheduler._background)
    assert (await run_rows(sqlite))[MONDAY_SLOT].status == "missed"


# --- signals, budget, pause -------------------------------------------------------------------

@pytest.fixture
async def feed() -> AsyncIterator[str]:
    """A signal feed on loopback: /good (JSON lines), /broken (HTTP 503)."""
    async def good(_: web.Request) -> web.Response:
        lines = [json.dumps({"title": "Copper squeeze in Shanghai", "context": "LME +4%"}),
                 "Gold holds $2300"]
        return web.Response(text="\n".join(lines))

    async def broken(_: web.Request) -> web.Response:
        return web.Response(status=503, text="down")

    app = web.Application()
    app.router.add_get("/good", good)
    app.router.add_get("/broken", broken)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("/"))
    finally:
        await server.close()


@pytest.mark.parametrize(("source", "debated", "problem"), [
    ("{tmp}/missing.txt", 0, "cannot read {tmp}/missing.txt: No such file or directory"),
    ("{tmp}/signals.jsonl", 1, "signals.jsonl line 2: not valid JSON"),
    ("{feed}broken", 0, "answered HTTP 503"),
    ("{feed}good", 2, None),
])
async def test_signal_sources_are_read_at_firing_and_failures_reported(
        source: str, debated: int, problem: str | None, sqlite: Database, fake: FakeSlack,
        feed: str, tmp_path: Path) -> None:
    (tmp_path / "signals.jsonl").write_text(
        json.dumps({"title": "Oil <!channel> up", "context": "Brent +3%"}) + "\n{oops\n")
    schedule = {**MORNING, "topics": [],
                "source": source.format(tmp=tmp_path, feed=feed)}

    def allowing_loopback(**kw: Any) -> Settings:  # the feed is on loopback
        return rehearsal_settings(allow_private_sources=True, **kw)

    async with replica(sqlite, fake, schedules=(schedule,), settings=allowing_loopback) as r:
        report = await r.scheduler.fire("morning")
    assert report is not None and report.status == RunStatus.DONE
    assert len(report.debate_ids) == debated
    (digest,) = roots(fake)
    body = blocks_text(digest)
    if problem is not None:
        assert problem.format(tmp=tmp_path) in body
        assert report.digest is not None and report.digest.source_problems
    else:
        assert "Copper squeeze in Shanghai" in body and "Skipped, failed" not in body
    assert "<!channel>" not in body


async def test_the_budget_skips_signals_with_the_reason(sqlite: Database,
                                                         fake: FakeSlack) -> None:
    async with replica(sqlite, fake, settings=lambda **kw: priced(daily_budget_usd=0.000001,
                                                                       **kw)) as r:
        report = await r.scheduler.fire("morning")
    assert report is not None and report.status == RunStatus.DONE and report.debate_ids == ()
    assert report.digest is not None
    assert {o.status for o in report.digest.outcomes} == {"skipped"}
    body = blocks_text(roots(fake)[0])
    assert "Brent crude breaks $90" in body and "today's budget has $0.00" in body


async def test_pause_skips_slots_on_every_replica_and_resume_restores(
        sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake) as r:
        view = await r.scheduler.pause("morning", "UREVIEWER")
        assert view.paused is True
        skipped = await r.scheduler.fire("morning")
        assert skipped is not None and skipped.status == RunStatus.PAUSED
        assert (await r.scheduler.views())[0].paused is True
        await r.scheduler.resume("morning", "UREVIEWER")
        r.clock.set("2024-05-07T06:00:01")
        ran = await r.scheduler.fire("morning")
        async with sqlite.transaction() as session:
            kinds = [e.kind for e in await audit.events(session, None)]
    assert ran is not None and ran.status == RunStatus.DONE
    assert len(roots(fake)) == 1
    assert (await run_rows(sqlite))[MONDAY_SLOT].status == RunStatus.PAUSED
    assert "schedule_paused" in kinds and "schedule_resumed" in kinds


async def test_list_schedules_shows_the_next_firing_and_state(sqlite: Database) -> None:
    quiet = {**MORNING, "id": "weekly", "cron": "30 9 * * 0", "enabled": False}
    async with replica(sqlite, None, schedules=(MORNING, quiet), worker=False,
                       now="2024-05-06T06:00:04") as r:
        views = {v.id: v for v in await r.scheduler.views()}
    assert views["morning"].next_fire == utc("2024-05-07T06:00:00")
    assert views["morning"].timezone == "Europe/Paris" and views["morning"].paused is False
    assert views["weekly"].enabled is False and views["weekly"].next_fire is None


# --- run now, CLI -----------------------------------------------------------------------------

async def test_run_now_fires_a_manual_slot_and_the_digest_reaches_slack(
        sqlite: Database, fake: FakeSlack) -> None:
    async with replica(sqlite, fake) as r:
        await r.scheduler.pause("morning", "UOPS")        # operators fire paused ones too
        report = await r.scheduler.run_now("morning")
        assert await r.scheduler.last_cron_slot("morning") is None
    assert report.status == RunStatus.DONE and report.slot.startswith("manual:2024-05-06T06:00:04")
    (digest,) = roots(fake)
    assert digest["ts"] == report.message_ts and "Digest: morning" in blocks_text(digest)
    assert len(fake.replies(CHANNEL, digest["ts"])) == len(report.debate_ids) == 2


def test_cli_lists_and_runs_a_schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from bot.main import main

    config = tmp_path / "dialectic.toml"
    config.write_text('timezone = "Europe/Paris"\n\n[[schedules]]\nid = "morning"\n'
                      'cron = "0 8 * * 1-5"\nchannel = "C0MARKETS"\n'
                      'topics = ["Brent crude breaks $90"]\n')
    monkeypatch.setenv("DIALECTIC_CONFIG", str(config))
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("DIALECTIC_REHEARSAL", "1")
    monkeypatch.setenv("DIALECTIC_POLL_INTERVAL", "0.05")
    assert main(["schedule", "list"]) == 2       # a read: it never creates the database
    assert "no database at" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0
    assert main(["schedule", "list"]) == 0
    assert "morning  0 8 * * 1-5 (Europe/Paris)  active  next" in capsys.readouterr().out
    assert main(["schedule", "run", "morning"]) == 0
    assert "morning manual:" in capsys.readouterr().out
    assert main(["schedule", "run", "nope"]) == 2
    assert "unknown schedule 'nope'" in capsys.readouterr().out


def test_a_bad_schedule_configuration_is_refused_clearly() -> None:
    with pytest.raises(ConfigurationError, match=r"^schedules\.0\.cron: a cron"):
        load_settings({}, schedules=[{**MORNING, "cron": "0 8 * *"}])


# --- the whole server stack -------------------------------------------------------------------

@asynccontextmanager
async def server_stack(tmp_path: Path) -> AsyncIterator[tuple[Assembly, FakeSlack]]:
    """The served app with Slack, workers and the scheduler (its cleanup_ctx), on the fake
    Slack."""
    async with FakeSlack() as slack:
        # no grace: a slot of today that already passed is not caught up at start (between 08:00
        # and 09:00 Paris time on a weekday it was, and a second digest reached the channel)
        settings = harness_settings(tmp_path, slack, None, {
            "schedules": ({**MORNING, "misfire_grace_seconds": 0},), "timezone": "Europe/Paris",
            "slack_post_interval": 0.01})
        async with assembled(settings) as parts:
            server = TestServer(web_app(parts, settings, workers=2, scheduler=True),
                                host="127.0.0.1", port=0)
            await server.start_server()
            try:
                yield parts, slack
            finally:
                await server.close()


async def test_the_server_starts_the_scheduler_and_run_now_reaches_slack(tmp_path: Path) -> None:
    async with server_stack(tmp_path) as (parts, slack):
        scheduler = parts.scheduler
        assert scheduler.aps is not None and scheduler.aps.running
        assert scheduler.aps.get_job("morning") is not None
        report = await scheduler.run_now("morning")
        assert report.status == RunStatus.DONE
        digest = slack.message(CHANNEL, report.message_ts or "")
        assert digest is not None and "Digest: morning" in blocks_text(digest)
        assert len(slack.replies(CHANNEL, digest["ts"])) == 2
    assert not scheduler.aps.running


async def test_a_digest_is_the_only_channel_message_with_the_real_notifier(
        tmp_path: Path) -> None:
    async with server_stack(tmp_path) as (parts, slack):
        report = await parts.scheduler.run_now("morning")
        await asyncio.sleep(0.3)                         # let queued notifier posts land
        assert [m["ts"] for m in roots(slack)] == [report.message_ts]


async def test_a_workspaces_schedule_runs_under_its_budget(sqlite: Database,
                                                           fake: FakeSlack) -> None:
    """A schedule run for a workspace (`team`) makes that workspace's debates: its own daily
    cap skips them, with the reason, while the operator's schedule beside it runs."""
    own = {**MORNING, "id": "teamtwo", "team": "T0SECOND"}
    async with replica(sqlite, fake, settings=lambda **kw: priced(daily_budget_usd=100.0, **kw),
                       schedules=(MORNING, own)) as r:
        await ws.save(sqlite, "T0SECOND", {"daily_budget_usd": 0.000001}, by="UADMIN",
                      admin=True, now=utcnow())
        skipped = await r.scheduler.fire("teamtwo")
        ran = await r.scheduler.fire("morning")
    assert skipped is not None and skipped.digest is not None and skipped.debate_ids == ()
    assert {o.status for o in skipped.digest.outcomes} == {"skipped"}
    assert all("this workspace's daily budget has $0.00" in o.reason
               for o in skipped.digest.outcomes)
    assert ran is not None and len(ran.debate_ids) == 2
