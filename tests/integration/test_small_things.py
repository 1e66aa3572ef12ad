"""The small things a person reads, each through the surface that shows it: no Python repr in the
terminal, `list` columns as wide as their content, intervals and counts written as words, a bare
group command prints its help, a mistyped provider scheme is named and dropped, eval's notes wrap
at words, the console draws one heatmap per group, and every /api/ error is the API's JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import update

from bot.cli.oversight import _rate
from bot.http.console import transcript_page
from bot.service.timeline import timeline_of
from engine.domain import ConsensusSummary, CostBreakdown, DebateRequest, DebateResult
from engine.oversight.inference import Figure
from engine.settings import EngineSettings
from engine.vocabulary import Mode, ResultStatus
from storage.db import Database
from storage.models import DebateRow
from storage.records import DebateRecord, DebateStatus
from tests.integration.test_cli_reviews import pending_review
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

__all__ = ["clean_env", "cli"]  # fixtures

ENGINE = EngineSettings()


def test_the_structured_rubric_reads_as_words_not_a_dict(cli: Cli) -> None:
    done = cli("run", "Adopt an event bus?", "--mode", "structured")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "{'" not in text and "rubric: for: logic " in text and "; against: logic " in text


async def test_list_columns_are_as_wide_as_their_content(cli: Cli, tmp_path: Path) -> None:
    url, db, _, review = await pending_review(tmp_path)
    async with db.transaction() as session:   # the awaiting debate finished with a step missing
        row = await session.get(DebateRow, review.debate_id)
        assert row is not None and row.result is not None
        result = {**row.result, "missing": ["judge verdict"]}
        await session.execute(update(DebateRow).where(DebateRow.id == review.debate_id)
                              .values(result=result))
    await db.dispose()
    done = await asyncio.to_thread(cli, "list", env={"DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    header, first = done.stdout.splitlines()[:2]
    assert "awaiting review, incomplete" in first
    for column, cell in (("mode", "redteam"), ("cost", "$"), ("topic", "Should")):
        assert header.index(column) == first.index(cell), (column, header, first)


def _consensus_record(*, claims: int, interval: tuple[float, float], calls: int) -> DebateRecord:
    items = [*(f"pro.{d}" for d in ("logic", "evidence")), *(f"con.{d}" for d in ("logic",
             "evidence")), *(f"claim.P{i}" for i in range(1, claims + 1))]
    ratings = {j: [5.0] * len(items) for j in ("ada", "bob", "cy")}
    result = DebateResult(
        id="d1", status=ResultStatus.COMPLETED, mode=Mode.CONSENSUS, topic="Adopt?",
        verdict="against", consensus=ConsensusSummary(
            alpha=-0.2, alpha_interval=interval, judges=list(ratings), items=items,
            ratings=ratings),
        cost=CostBreakdown(calls=calls))
    return DebateRecord(id="d1", mode="consensus", status=DebateStatus.COMPLETED,
                        request=DebateRequest(topic="Adopt?"), preset="default", result=result)


def test_the_console_writes_a_negative_interval_and_one_claims_heatmap() -> None:
    record = _consensus_record(claims=9, interval=(-0.34, -0.03), calls=1)
    page = transcript_page(ENGINE, record, timeline=timeline_of(ENGINE, record, []),
                           rehearsal=False)
    assert "95% CI [\u22120.34, \u22120.03]" in page and "-0.34-" not in page
    assert page.count('class="hm-group">Claims<') == 1   # nine claims, one picture
    assert page.count('class="hm-group">Pro<') == 1
    assert "1 call (" in page and "1 calls" not in page


@pytest.mark.parametrize(("n", "words"), [(1, "1 label"), (2, "2 labels"), (0, "0 labels")])
def test_counts_agree_with_their_noun(n: int, words: str) -> None:
    figure = Figure(name="auto_approved_upheld", status="insufficient", n=n, min_n=30)
    assert _rate(figure) == f"not enough data ({words})"


def test_a_bare_group_command_prints_its_help(cli: Cli) -> None:
    for group, action in (("judges", "report"), ("thresholds", "suggest"),
                          ("reviews", "decide"), ("schedule", "run"), ("reviewers", "link")):
        done = cli(group)
        assert done.returncode == 2
        assert done.stdout.startswith(f"usage: dialectic {group}") and action in done.stdout
        assert "required" not in done.stdout + done.stderr


@pytest.mark.parametrize(("url", "suggested", "why"), [
    ("htp:/localhost", "http://localhost", "its scheme is 'htp'"),
    ("htps://api.example.com/v1", "https://api.example.com/v1", "its scheme is 'htps'"),
    ("localhost:8080/v1", "http://localhost:8080/v1", ""),
])
def test_a_mistyped_provider_scheme_is_named_and_dropped(cli: Cli, url: str, suggested: str,
                                                         why: str) -> None:
    done = cli("doctor", env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url})
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2
    assert f"did you mean {suggested}?" in said and why in said
    assert "://htp" not in said and "://htps" not in said


def test_evals_rehearsal_note_wraps_at_words(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    done = cli("eval", "--builtin", "arithmetic", "--n", "2", "--modes", "single", "--yes")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    note = next(i for i, line in enumerate(lines) if line.startswith("REHEARSAL: answers"))
    assert lines[note].rstrip().endswith("OPENAI_BASE_URL),")   # cut between words
    assert lines[note + 1].strip().startswith("which does not read the questions")


async def test_every_api_error_is_json_of_one_shape(db: Database) -> None:
    async with served(db, rehearsal_settings()) as (base, _, _app), aiohttp.ClientSession() as s:
        json_type = {"Content-Type": "application/json"}
        status, known = await call(s, "GET", f"{base}/api/debates/nope")
        assert status == 404 and set(known) == {"error"}
        async with s.get(f"{base}/api/debate") as resp:
            assert resp.status == 404 and resp.content_type == "application/json"
            body = json.loads(await resp.text())
        assert set(body) == set(known) and "GET /api/debate" in body["error"]
        async with s.delete(f"{base}/api/debates", headers=json_type) as resp:
            assert resp.status == 405 and resp.content_type == "application/json"
            body = json.loads(await resp.text())
            allowed = resp.headers["Allow"]
        assert set(body) == {"error"} and "DELETE is not allowed on /api/debates" in body["error"]
        assert "POST" in allowed and "POST" in body["error"]
        async with s.get(f"{base}/no-such-page") as resp:   # pages stay pages
            assert resp.status == 404 and resp.content_type != "application/json"
