"""`dialectic judges report` and `dialectic thresholds show|suggest|apply` against a database
holding a settled history with planted judge biases: the report names them, the suggestion shows
its data and applies nothing, applying is explicit and audited, bad input is one line."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from engine.domain import utcnow
from storage import audit
from storage.db import Database
from tests.support.audit_fixtures import SyntheticJudge, history
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.oversight_fixtures import (
    REVIEWER,
    Clock,
    decided_history,
    ending_now,
    settle_history,
)
from tests.support.service_fixtures import rehearsal_settings, runtime

__all__ = ["clean_env", "cli"]  # fixtures

JUDGES = [SyntheticJudge(name="technical"), SyntheticJudge(name="business", habit="first"),
          SyntheticJudge(name="risk", habit="harsh"), SyntheticJudge(name="general")]


async def _database(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path}/oversight.db"
    db = Database(url)
    await db.upgrade()
    planted = ending_now(history(JUDGES, seed=21, debates=200), utcnow())
    clock = Clock(planted[0].finished_at)
    rt = runtime(db, rehearsal_settings(database_url=url, reviewers=REVIEWER,
                                        spot_check_fraction=0.0))
    rt.service.clock = clock
    await settle_history(rt.reviews, clock, planted)
    await db.dispose()
    return url


async def test_the_judge_report_from_the_terminal(cli: Cli, tmp_path: Path) -> None:
    env = {"DATABASE_URL": await _database(tmp_path)}
    done = await asyncio.to_thread(cli, "judges", "report", env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "200 judged debates" in out and "minimums: 30 decisive verdicts" in out
    assert "business (gpt-4o-mini) — 200 debates — position bias" in out
    assert "risk (gpt-4o-mini) — 200 debates — leniency" in out
    assert "technical (gpt-4o-mini) — 200 debates — nothing flagged" in out
    assert "100% vs" in out and "⚑" in out
    done = await asyncio.to_thread(cli, "judges", "report", "--json", env=env)
    data = json.loads(done.stdout)
    flagged = {j["judge"]: [n for n in ("position_bias", "verbosity_bias", "leniency", "drift")
                            if j[n]["flagged"]] for j in data["judges"]}
    assert flagged == {"business": ["position_bias"], "general": [], "risk": ["leniency"],
                       "technical": []}
    done = await asyncio.to_thread(cli, "judges", "report", "--days", "1", env=env)
    assert "not enough data" in done.stdout   # the last day holds a couple of debates
    done = await asyncio.to_thread(cli, "judges", "report", "--preset", "nope", env=env)
    assert done.returncode == 2 and "unknown preset 'nope'" in done.stdout + done.stderr


async def test_suggest_applies_nothing_and_apply_is_audited(cli: Cli, tmp_path: Path) -> None:
    url = await _database(tmp_path)
    env = {"DATABASE_URL": url}
    done = await asyncio.to_thread(cli, "thresholds", "suggest", "--preset", "decision", env=env)
    assert done.returncode == 0, done.stderr
    assert "In force: high 0.8 · tentative 0.67 · escalate 0.5 — the preset's own" in done.stdout
    assert "Nothing was applied" in done.stdout and "auto-approved upheld" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--high", "0.85", "--as", "ops", "--reason", "trial", env=env)
    assert done.returncode == 0, done.stderr
    assert "high 0.85 · tentative 0.67 · escalate 0.5 (was high 0.8" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "show", env=env)
    assert ("decision     high 0.85 · tentative 0.67 · escalate 0.5 — applied by ops"
            in done.stdout)
    assert "routing uses these over the preset's own" in done.stdout
    assert "default      high 0.8 · tentative 0.67 · escalate 0.5 — the preset's own" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "suggest", "--preset", "decision", env=env)
    assert "applied by ops" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--escalate", "0.9", "--as", "ops", env=env)
    assert done.returncode == 2 and "escalate <= tentative <= high" in done.stdout + done.stderr
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--suggested", "--as", "ops", env=env)
    assert done.returncode == 2 and "no suggestion to apply" in done.stdout + done.stderr
    for blank in ("", " \u200b\u2060 "):   # a reason is required, and must show
        done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                       "--reset", "--as", "ops", "--reason", blank, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "say why you apply these thresholds" in done.stdout + done.stderr
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--reset", "--as", "ops", env=env)
    assert done.returncode == 2 and "say why you apply" in done.stdout + done.stderr
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--reset", "--as", "ops", "--reason", "back", env=env)
    assert done.returncode == 0 and "routes by its own cut-offs again" in done.stdout
    db = Database(url)
    async with db.transaction(readonly=True) as session:
        applied = [e for e in await audit.events(session, None) if e.kind == "thresholds_applied"]
    await db.dispose()
    assert [(e.actor, e.data["note"]) for e in applied] == [("ops", "trial"), ("ops", "back")]
    assert applied[0].data["evidence"]["source"] == "operator"
    assert "published_upheld" in applied[0].data["evidence"]["evaluation"]


async def test_applying_the_suggestion_puts_it_in_force_with_its_evidence(
        cli: Cli, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/suggested.db"
    db = Database(url)
    await db.upgrade()
    await decided_history(db, results=600, fraction=1.0,
                          start=utcnow() - timedelta(days=2))
    await db.dispose()
    env = {"DATABASE_URL": url}
    target = ["--target", "0.95", "--tentative-target", "0.95", "--criterion", "point"]
    done = await asyncio.to_thread(cli, "thresholds", "suggest", "--preset", "decision",
                                   *target, env=env)
    assert done.returncode == 0, done.stderr
    assert "Suggested: high 0.68 · tentative 0.68 · escalate 0.45" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "suggest", "--preset", "decision",
                                   *target, "--json", env=env)
    data = json.loads(done.stdout)
    assert data["suggestion"]["status"] == "ok" and data["in_force"]["source"] == "preset"
    done = await asyncio.to_thread(cli, "thresholds", "apply", "--preset", "decision",
                                   "--suggested", *target, "--as", "ops",
                                   "--reason", "measured over 600 results", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "applied to preset decision by ops: high 0.68 · tentative 0.68" in done.stdout
    db = Database(url)
    async with db.transaction(readonly=True) as session:
        [applied] = [e for e in await audit.events(session, None)
                     if e.kind == "thresholds_applied"]
    await db.dispose()
    evidence = applied.data["evidence"]
    assert evidence["source"] == "suggestion" and evidence["labelled"] > 300
    assert evidence["suggested"]["published_upheld"]["estimate"] >= 0.95
    assert applied.data["thresholds"]["tentative"] == 0.68
