"""Lists and summaries say what is stored: a completed debate with parts missing is
*incomplete* in `GET /api/debates` and `dialectic list`, and `replay --wait` heads its summary
with the stored status (a routed debate is awaiting review, not "COMPLETED")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bot.service.results import status_words
from engine.domain import DebateRequest, DebateResult
from engine.vocabulary import Mode, ResultStatus
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings, running_worker, service, wait_done
from tests.support.slack_fixtures import STRICT
from tests.support.storage_fixtures import add_debate

cli, clean_env = cli, clean_env  # the fixtures
TOPIC = "Should we move billing to PostgreSQL?"
GAP = ["simple/verdict: degraded (could not reach the provider)"]


def _result(status: ResultStatus = ResultStatus.COMPLETED, missing: list[str] | None = None
            ) -> DebateResult:
    return DebateResult(id="r", status=status, mode=Mode.SIMPLE, topic=TOPIC,
                        complete=not missing, missing=list(missing or []))


@pytest.mark.parametrize(("status", "result", "words"), [
    (DebateStatus.QUEUED, None, "queued"),
    (DebateStatus.COMPLETED, _result(), "completed"),
    (DebateStatus.COMPLETED, _result(missing=GAP), "completed, incomplete"),
    (DebateStatus.AWAITING_REVIEW, _result(missing=GAP), "awaiting review, incomplete"),
    (DebateStatus.APPROVED, _result(), "approved"),
    (DebateStatus.FAILED, _result(ResultStatus.FAILED, GAP), "failed"),
    (DebateStatus.TIMED_OUT, _result(ResultStatus.TIMED_OUT, GAP), "timed out"),
])
def test_status_words(status: DebateStatus, result: DebateResult | None, words: str) -> None:
    assert status_words(status, result) == words


async def _two_finished(db: Database) -> tuple[str, str]:
    whole = await add_debate(db, "Whole?", topic_key="a", status=DebateStatus.COMPLETED,
                             result=_result())
    partial = await add_debate(db, "Partial?", topic_key="b", status=DebateStatus.COMPLETED,
                               result=_result(missing=GAP))
    return whole.id, partial.id


async def test_the_api_list_says_incomplete(sqlite_db: Database) -> None:
    whole, partial = await _two_finished(sqlite_db)
    async with served(sqlite_db, rehearsal_settings()) as (base, _, _), \
            aiohttp.ClientSession() as s:
        status, listing = await call(s, "GET", f"{base}/api/debates?status=completed")
    assert status == 200
    by_id = {d["id"]: d for d in listing["debates"]}
    assert by_id[partial]["incomplete"] is True and by_id[partial]["missing"] == 1
    assert by_id[partial]["status_text"] == "completed, incomplete"
    assert by_id[whole]["incomplete"] is False and by_id[whole]["missing"] == 0
    assert by_id[whole]["status_text"] == "completed"


async def _stored_pair(url: str) -> tuple[str, str]:
    db = Database(url)
    try:
        await db.upgrade()
        return await _two_finished(db)
    finally:
        await db.dispose()


def test_the_cli_list_says_incomplete(cli: Cli, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/list.db"
    whole, partial = asyncio.run(_stored_pair(url))
    done = cli("list", env={"DATABASE_URL": url})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert "completed, incomplete" in lines[partial] and "Partial?" in lines[partial]
    assert "incomplete" not in lines[whole] and "completed" in lines[whole]
    empty = cli("list", "--status", "failed", env={"DATABASE_URL": url})
    assert empty.returncode == 0 and empty.stdout.startswith("no debates failed")


async def _routed_source(url: str) -> DebateRecord:
    """A consensus debate whose preset routes every result to a reviewer, run to the end."""
    db = Database(url)
    try:
        await db.upgrade()
        svc = service(db, rehearsal_settings(presets=STRICT, database_url=url))
        sub = await svc.submit(DebateRequest(topic=TOPIC, preset="strict"),
                               origin=Origin(surface="api"))
        async with running_worker(svc):
            return await wait_done(svc, sub.record.id)
    finally:
        await db.dispose()


def test_replay_wait_heads_its_summary_with_the_stored_status(cli: Cli, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/replay.db"
    config = tmp_path / "dialectic.toml"
    config.write_text('[presets.strict]\nmode = "consensus"\n'
                      "thresholds = { high = 1.0, tentative = 1.0, escalate = 0.0 }\n")
    source = asyncio.run(_routed_source(url))
    assert source.status is DebateStatus.AWAITING_REVIEW
    done = cli("replay", source.id, "--synthesizer", "gpt-4.1", "--wait",
               env={"DATABASE_URL": url, "DIALECTIC_CONFIG": str(config)})
    assert done.returncode == 0, done.stdout + done.stderr
    heading = next(line for line in done.stdout.splitlines() if line.endswith(TOPIC))
    assert heading.startswith("AWAITING REVIEW — "), done.stdout
    assert "COMPLETED —" not in done.stdout


async def _marked(url: str) -> dict[str, str]:
    db = Database(url)
    try:
        await db.upgrade()
        source = await add_debate(db, "Source?", topic_key="s", status=DebateStatus.COMPLETED,
                                  result=_result().model_copy(update={"rehearsal": True}))
        replay = await add_debate(db, "Source?", topic_key="r", status=DebateStatus.COMPLETED,
                                  result=_result(missing=GAP), parent_id=source.id,
                                  reused_steps=("simple/opening",))
        cached = await add_debate(db, "Cached?", topic_key="c", status=DebateStatus.COMPLETED,
                                  result=_result(), cached_from=source.id)
        return {"source": source.id, "replay": replay.id, "cached": cached.id}
    finally:
        await db.dispose()


def test_the_cli_list_marks_what_the_console_badges(cli: Cli, tmp_path: Path) -> None:
    """Rehearsal, replay, cached and incomplete: the same marks as the console's badges."""
    url = f"sqlite+aiosqlite:///{tmp_path}/marks.db"
    ids = asyncio.run(_marked(url))
    done = cli("list", env={"DATABASE_URL": url, "OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stdout
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["id", "status", "mode", "cost", "topic", "[what", "to", "know]"]
    lines = {line.split()[0]: line for line in rows}
    assert lines[ids["source"]].endswith("Source?  [rehearsal]")
    assert lines[ids["replay"]].endswith(f"[incomplete; replay of {ids['source']}]")
    assert lines[ids["cached"]].endswith(f"Cached?  [cached result of {ids['source']}]")
