"""One result, one story (issue 33): a stored decision debate whose judges have habits (so the
calibrated scores differ from the ones they gave, and stretch past the 1–10 scale) is read
through the API, `dialectic show`, the console's page and Slack's result blocks, and every
number on them is the same: the headline and its rubric means, alpha, the discussion flag's
reason, each divergence point's figures (as scored, and calibrated, each named), the routing
sentence. No rating outside the scale is shown as one.

Debates are argued and judged through the real openai client against the fake provider; the
first one gives the judges a history, the second is the one read."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from markupsafe import escape as html

from bot.service.results import routing_sentence
from bot.settings import load_settings
from bot.slack.mrkdwn import escape as mrkdwn
from bot.slack.views.debate import divergence_summary
from storage import debates
from storage.db import Database
from tests.fakes.openai_server import FakeOpenAI, last_text
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.preset_fixtures import DIMENSIONS, LOPSIDED, is_judge, is_opening, opening
from tests.support.service_fixtures import wait_done

__all__ = ["clean_env", "cli"]  # fixtures
pytestmark = pytest.mark.integration

#: the business judge is lenient: it scores both positions high (the others: 9 and 2), so its
#: calibrated 10 lands past the scale
LENIENT = {**LOPSIDED, "position_a": dict.fromkeys(DIMENSIONS, 10),
           "position_b": dict.fromkeys(DIMENSIONS, 9)}


def judging(body: dict[str, Any]) -> dict[str, Any]:
    return LENIENT if "business value" in last_text(body, "system") else LOPSIDED


def env_for(fake: FakeOpenAI, url: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_CACHE_TTL_SECONDS": "0", "DIALECTIC_POLL_INTERVAL": "0.05",
            "DATABASE_URL": url, "COLUMNS": "400"}


async def decide(db: Database, fake: FakeOpenAI, url: str, topic: str
                 ) -> tuple[dict[str, Any], str]:
    """A decision debate over the API (a server of its own, so it reads the judges' history
    afresh): (the API's record, the console's page)."""
    settings = load_settings({**env_for(fake, url), "DIALECTIC_CONFIG": "/dev/null"})
    async with served(db, settings) as (base, rt, _), aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", f"{base}/api/debates",
                                  json={"topic": topic, "preset": "decision"})
        assert status == 202, body
        await wait_done(rt.service, body["id"], timeout=60)
        status, record = await call(s, "GET", f"{base}/api/debates/{body['id']}")
        assert status == 200
        async with s.get(f"{base}/debates/{body['id']}") as page:
            assert page.status == 200
            return record, await page.text()


def words(blocks: Any) -> str:
    """Every text of Slack's blocks, one per line."""
    if isinstance(blocks, dict):
        return "\n".join(words(v) for v in blocks.values())
    if isinstance(blocks, list):
        return "\n".join(words(v) for v in blocks)
    return blocks if isinstance(blocks, str) else ""


def figures(point: dict[str, Any]) -> str:
    """A divergence point's figures as every surface prints them, from the API's numbers (the
    calibrated ones when calibration changed them)."""
    scored = f"mean {point['mean']:.1f}, spread {point['spread']:.1f}"
    if point["calibrated"] == point["ratings"]:
        return scored
    return (f"{scored}; calibrated mean {point['calibrated_mean']:.1f}, "
            f"spread {point['calibrated_spread']:.1f}")


def on_the_scale(point: dict[str, Any]) -> None:
    for rating in (*point["ratings"].values(), *point["calibrated"].values()):
        assert 1.0 <= rating <= 10.0, point
    assert 0.0 <= point["spread"] <= 9.0 and 0.0 <= point["calibrated_spread"] <= 9.0


async def test_one_stored_result_reads_the_same_on_every_surface(
        sqlite_db: Database, tmp_path: Path, cli: Cli) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'dialectic.db'}"
    async with FakeOpenAI() as fake:
        fake.script(is_opening, opening)
        fake.script(is_judge, judging)
        await decide(sqlite_db, fake, url, "Adopt Kafka for events?")   # the judges' history
        record, page = await decide(sqlite_db, fake, url, "Adopt Kafka for billing?")
        shown = await asyncio.to_thread(cli, "show", record["id"], env=env_for(fake, url))
    assert shown.returncode == 0, shown.stderr
    async with sqlite_db.transaction(readonly=True) as session:
        stored = await debates.get(session, record["id"])
    assert stored.result is not None
    slack = words(divergence_summary(stored.result, transcript_url="https://x.test/t",
                                     thresholds=stored.result.consensus.thresholds
                                     if stored.result.consensus else None).blocks)
    result, terminal = record["result"], shown.stdout

    def everywhere(text: str) -> None:
        assert text in terminal, (text, terminal)
        assert str(html(text)) in page, text
        assert mrkdwn(text) in slack, (text, slack)

    # the headline and the rubric means it states (the judges' own, on the 1-10 scale)
    consensus = result["consensus"]
    means = consensus["means"]
    assert f"{means['pro']:.1f} for vs {means['con']:.1f} against" in result["verdict"]
    everywhere(result["verdict"])
    assert f"For (rubric mean, 1–10)*\n{means['pro']:.1f}" in slack
    assert f"Against (rubric mean, 1–10)*\n{means['con']:.1f}" in slack
    assert (f"For: rubric mean <b>{means['pro']:.1f}</b>; against: rubric mean "
            f"<b>{means['con']:.1f}</b> (on the 1–10 scale)") in page
    # the calibration did something, past the scale: what alpha was computed over
    assert consensus["calibrated"] != consensus["ratings"]
    assert max(v for row in consensus["calibrated"].values() for v in row if v) > 10.0
    # alpha, the discussion flag, the routing sentence
    alpha = result["discussion"]["reason"].split()[1]
    assert result["discussion"]["needed"] is True
    assert f"Alpha {alpha}" in terminal and f"alpha <b>{alpha}</b>" in page
    assert f"{alpha} (" in slack
    everywhere(result["discussion"]["reason"])
    sentence = routing_sentence(result["routing"])
    assert sentence in terminal and sentence in page
    assert f"*Routing:* {sentence[0].lower()}{sentence[1:-1]}" in slack
    # every divergence point, with its figures named, and no rating past the scale
    points = [*result["discussion"]["points"], *result["divergence"]["disagreements"][:3],
              *result["divergence"]["agreements"][:5]]
    assert points, result["divergence"]
    for point in points:
        on_the_scale(point)
        everywhere(figures(point))
    assert any(p["calibrated_mean"] != p["mean"] for p in points)
    for point in result["divergence"]["disagreements"][:3]:   # Slack lists their ratings
        ratings = ", ".join(f"{j} {round(v, 1):g}" for j, v in point["ratings"].items())
        assert f"{figures(point)} ({ratings})" in slack
