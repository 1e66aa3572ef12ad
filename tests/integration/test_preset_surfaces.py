"""Presets do what docs/presets-and-scheduling.md's table says, on every surface, with debates
argued and judged through the real openai client against the fake provider
(tests/support/preset_fixtures.py scripts the judges to agree or to split):

* `decision`: alpha below 0.50 (or the preset's cut-off) flags "needs human discussion" with
  the three core divergence points, in the API's JSON, on the console's page, in the CLI's prose
  and `--json`, and in Slack's result; the headline beside it never says a side won;
* `brief`: the one-page brief (points to discuss, agreements, arguments map) on the console, in
  the CLI (wrapped to the terminal) and in Slack;
* `market`, `compliance`, `appeal`: their judges and routing (appeal: published at alpha >= 0.80,
  a person below 0.50), and neither flag nor brief.

Settings are what a user sets: environment variables and a dialectic.toml."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from markupsafe import escape as html

from bot.settings import Settings, load_settings
from bot.slack.mrkdwn import escape as mrkdwn
from storage.db import Database
from storage.records import DebateStatus
from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.preset_fixtures import CLAIM, script
from tests.support.service_fixtures import wait_done
from tests.support.slack_fixtures import CHANNEL, slack_harness

__all__ = ["clean_env", "cli"]  # fixtures
pytestmark = pytest.mark.integration

FLAG = "Needs human discussion"


def env_for(fake: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_CACHE_TTL_SECONDS": "0", "DIALECTIC_POLL_INTERVAL": "0.05"}


def settings_for(fake: FakeOpenAI) -> Settings:
    return load_settings({**env_for(fake), "DIALECTIC_CONFIG": "/dev/null"})


async def debate_over_http(db: Database, fake: FakeOpenAI, preset: str, topic: str
                           ) -> tuple[dict[str, Any], str]:
    """Submit over the API, let the server's worker run it; (the API's JSON, the page's HTML)."""
    async with served(db, settings_for(fake)) as (base, rt, _), aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", f"{base}/api/debates",
                                  json={"topic": topic, "preset": preset})
        assert status == 202, body
        await wait_done(rt.service, body["id"], timeout=60)
        status, record = await call(s, "GET", f"{base}/api/debates/{body['id']}")
        assert status == 200
        async with s.get(f"{base}/debates/{body['id']}") as page:
            assert page.status == 200
            return record, await page.text()


def widest(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["divergence"]["disagreements"][:3]


# --------------------------------------------------------------------------------------------
# decision: the API and the console


async def test_a_split_decision_needs_human_discussion_in_the_api_and_on_the_page(
        db: Database) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        record, page = await debate_over_http(db, fake, "decision", "Adopt Kafka for billing?")
    result = record["result"]
    flag = result["discussion"]
    assert flag["needed"] is True and flag["cutoff"] == 0.5
    assert flag["reason"] == f"alpha {result['consensus']['alpha']:.2f} < 0.50"
    assert len(flag["points"]) == 3 and flag["points"] == widest(result)
    assert result["brief"] is None
    assert result["verdict"].startswith("Contested:") and result["winner"] is None
    assert record["status"] == DebateStatus.AWAITING_REVIEW
    assert FLAG in page and str(html(flag["reason"])) in page
    for point in flag["points"]:
        assert str(html(point["label"])) in page
    verdict = page[page.index('class="verdict"'):page.index("</p>", page.index('class="verdict"'))]
    assert "Contested" in verdict and "wins" not in verdict   # never settled beside the flag
    assert "Not flagged" not in page


async def test_an_agreeing_decision_is_not_flagged(db: Database) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "agree")
        record, page = await debate_over_http(db, fake, "decision", "Adopt Kafka for events?")
    flag = record["result"]["discussion"]
    assert flag == {"needed": False, "reason": "alpha 1.00 ≥ 0.50", "alpha": 1.0,
                    "cutoff": 0.5, "points": []}
    assert FLAG not in page and "Not flagged for human discussion: alpha 1.00 ≥ 0.50." in page


async def test_the_api_describes_the_fields(db: Database) -> None:
    async with FakeOpenAI() as fake, served(db, settings_for(fake)) as (base, _, _), \
            aiohttp.ClientSession() as s:
        status, doc = await call(s, "GET", f"{base}/api/openapi.json")
    assert status == 200
    schemas = doc["components"]["schemas"]
    result = schemas["DebateResult"]["properties"]
    assert "discussion" in result and "brief" in result
    assert set(schemas["Discussion"]["properties"]) == {"needed", "reason", "alpha", "cutoff",
                                                         "points"}
    assert "needs human discussion" in schemas["Discussion"]["description"]
    assert {"points", "agreements", "arguments"} <= set(schemas["Brief"]["properties"])


# --------------------------------------------------------------------------------------------
# brief: the API and the console


async def test_the_brief_is_a_section_of_its_page(db: Database) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        record, page = await debate_over_http(db, fake, "brief", "Postgres or DynamoDB?")
    brief = record["result"]["brief"]
    assert brief["points"] == widest(record["result"]) and brief["split_on_winner"] is True
    assert {row["claim"] for row in brief["arguments"]} == {
        f"{CLAIM[side]} ({n})" for side in CLAIM for n in (1, 2)}
    assert record["result"]["discussion"] is None
    section = page[page.index('id="brief"'):]
    for heading in ("Decision brief", "Points to discuss", "Agreements", "Arguments map"):
        assert heading in section
    assert "The judges' calls split on the winner" in section
    for side in CLAIM:
        assert str(html(CLAIM[side])) in section and CLAIM[side] not in section
    assert FLAG not in page


# --------------------------------------------------------------------------------------------
# the other presets: what their rows in the presets guide say


@pytest.mark.parametrize(("preset", "panel", "judges", "routing", "status"), [
    ("market", "agree", ["business", "risk", "technical"], "auto_approve", "completed"),
    ("compliance", "split", ["general", "risk", "technical"], "escalate", "awaiting_review"),
    ("appeal", "agree", ["context", "fairness", "policy"], "auto_approve", "completed"),
    ("appeal", "split", ["context", "fairness", "policy"], "escalate", "awaiting_review"),
])
async def test_the_other_presets_route_as_their_rows_say(
        db: Database, preset: str, panel: str, judges: list[str], routing: str,
        status: str) -> None:
    async with FakeOpenAI() as fake:
        script(fake, panel)
        record, page = await debate_over_http(db, fake, preset, f"Signal for {preset} {panel}?")
    result = record["result"]
    assert result["consensus"]["judges"] == judges
    assert (result["routing"], record["status"]) == (routing, status)
    assert result["discussion"] is None and result["brief"] is None
    assert FLAG not in page and 'id="brief"' not in page
    story = ("Published automatically: the judges agree." if routing == "auto_approve"
             else "Escalated to a human reviewer: the judges disagree too much to publish.")
    assert story in page


async def test_compliance_is_refused_with_the_figures_never_downgraded(db: Database) -> None:
    """Over the day's cap a compliance debate is refused (402, the figures), where a decision
    would run a cheaper mode; nothing is stored."""
    async with FakeOpenAI() as fake:
        settings = load_settings({**env_for(fake), "DIALECTIC_CONFIG": "/dev/null",
                                  "DIALECTIC_DAILY_BUDGET_USD": "0.004"})
        async with served(db, settings) as (base, _, _), aiohttp.ClientSession() as s:
            status, body = await call(s, "POST", f"{base}/api/debates",
                                      json={"topic": "Store EU logs in us-east-1?",
                                            "preset": "compliance"})
            assert status == 402 and "$" in json.dumps(body), body
            status, listed = await call(s, "GET", f"{base}/api/debates")
    assert status == 200 and listed["debates"] == []


# --------------------------------------------------------------------------------------------
# the CLI: prose and --json


async def test_the_cli_says_a_decision_needs_discussion(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        env = {**env_for(fake), "COLUMNS": "200"}
        prose = await asyncio.to_thread(cli, "run", "Adopt Kafka?", "--preset", "decision",
                                        env=env)
        machine = await asyncio.to_thread(cli, "run", "Adopt Kafka?", "--preset", "decision",
                                          "--json", env=env)
    result = json.loads(machine.stdout)
    flag = result["discussion"]
    assert flag["needed"] is True and len(flag["points"]) == 3
    assert f"NEEDS HUMAN DISCUSSION ({flag['reason']})" in prose.stdout
    assert "The core divergence points:" in prose.stdout
    for point in flag["points"]:
        assert f"- {point['label']} (mean" in prose.stdout
    assert "Verdict: Contested" in prose.stdout and " wins" not in prose.stdout


async def test_a_preset_from_dialectic_toml_flags_by_its_own_cutoff(cli: Cli,
                                                                   tmp_path: Path) -> None:
    config = tmp_path / "dialectic.toml"
    config.write_text('[presets.adr]\ndiscussion = true\n'
                      'thresholds = { high = 0.9, tentative = 0.8, escalate = 0.7 }\n')
    async with FakeOpenAI() as fake:
        script(fake, "split")
        done = await asyncio.to_thread(cli, "run", "Adopt the ADR?", "--preset", "adr",
                                       "--json", env={**env_for(fake),
                                                      "DIALECTIC_CONFIG": str(config)})
    flag = json.loads(done.stdout)["discussion"]
    assert flag["needed"] is True and flag["cutoff"] == 0.7 and flag["reason"].endswith("< 0.70")


async def test_the_cli_prints_the_brief_wrapped(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        env = {**env_for(fake), "COLUMNS": "60"}
        done = await asyncio.to_thread(cli, "run", "Postgres or DynamoDB for the ledger?",
                                       "--preset", "brief", env=env)
    out = done.stdout
    brief = out[out.index("Decision brief"):out.index("\nCost ")]
    for heading in ("Points to discuss:", "Agreements:", "Arguments map:"):
        assert heading in brief
    assert "For: " in brief and "Against: " in brief and CLAIM["FOR"][:20] in brief
    assert "The judges' calls split on the winner" in " ".join(brief.split())
    assert all(len(line) <= 60 for line in brief.splitlines()), brief


@pytest.mark.parametrize(("preset", "words"), [
    ("decision", ["NEEDS HUMAN DISCUSSION (alpha", "The core divergence points:"]),
    ("brief", ["Decision brief", "Points to discuss:", "Arguments map:", CLAIM["AGAINST"]]),
])
async def test_show_prints_a_stored_debate_as_its_preset_promises(
        sqlite_db: Database, cli: Cli, preset: str, words: list[str]) -> None:
    """On the SQLite file `dialectic` opens by DATABASE_URL (the PostgreSQL fixture's schema is
    the test's own, which a URL does not name)."""
    async with FakeOpenAI() as fake:
        script(fake, "split")
        record, _ = await debate_over_http(sqlite_db, fake, preset, f"Stored {preset}?")
    env = {"DATABASE_URL": str(sqlite_db.url), "COLUMNS": "200"}
    prose = await asyncio.to_thread(cli, "show", record["id"], env=env)
    machine = await asyncio.to_thread(cli, "show", record["id"], "--json", env=env)
    assert prose.returncode == 0 and machine.returncode == 0, prose.stderr
    assert prose.stdout.startswith("AWAITING REVIEW — ")
    for word in words:
        assert word in prose.stdout, word
    stored = json.loads(machine.stdout)["result"]
    assert (stored["discussion"], stored["brief"]) == (record["result"]["discussion"],
                                                       record["result"]["brief"])
    unknown = await asyncio.to_thread(cli, "show", "nosuchdebate", env=env)
    assert unknown.returncode != 0 and "Traceback" not in unknown.stdout + unknown.stderr


# --------------------------------------------------------------------------------------------
# Slack: the result in the thread


@pytest.mark.parametrize(("preset", "words"), [
    ("decision", [f"*{FLAG}* (alpha", "The core divergence points:"]),
    ("brief", ["*Points to discuss*", "*Agreements*", "*Arguments map*",
               mrkdwn(CLAIM["FOR"])]),
])
async def test_slack_shows_what_the_preset_promises(tmp_path: Path, preset: str,
                                                    words: list[str]) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        async with slack_harness(tmp_path, openai=fake) as h:
            await h.command(f"Adopt Kafka for billing? --preset {preset}")
            debate = await h.one_debate()
            await h.wait_finished(debate.id)
            root = h.fake.messages(CHANNEL)[0]
            summary = await h.wait_reply(CHANNEL, root["ts"], "Debate result")
            text = json.dumps(summary["blocks"], ensure_ascii=False)
            for word in words:
                assert word in text, word
            assert CLAIM["FOR"] not in text        # escaped
            h.assert_all_blocks_valid()
