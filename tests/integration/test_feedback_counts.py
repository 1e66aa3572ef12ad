"""Readers' feedback counted per preset beside the reviewers' labels, never as them: the judges
report and the routing audit (API, the Judges page, `dialectic judges report` and `dialectic
thresholds show`) show 👍 / 👎 and the agreement with the routing; rehearsal presses are counted
apart; the reviewer-labelled figures do not move."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.service.feedback import FeedbackDesk
from engine.domain import DebateResult, ResultStatus, utcnow
from engine.oversight.panel_records import PanelRecord
from engine.vocabulary import Mode, Routing
from storage.db import Database
from tests.support.audit_fixtures import SyntheticJudge, history
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.oversight_fixtures import (
    REVIEWER,
    Clock,
    add_running,
    ending_now,
    judged_result,
    settle_history,
)
from tests.support.service_fixtures import rehearsal_settings, runtime

__all__ = ["clean_env", "cli"]  # fixtures

TOKEN = "feedback-token"
API = {"Authorization": f"Bearer {TOKEN}"}
JUDGES = [SyntheticJudge(name="technical"), SyntheticJudge(name="risk", habit="harsh")]
#: 👍 3 · 👎 3; one published result read 👍 (agrees), one read 👎 (disagrees), one routed
#: result tied (no reading): 1 of 2 rated results agree.
LINE = ("👍 3 · 👎 3 · readers agree with the routing on 1 of 2 rated results (50%) · "
        "1 on rehearsals, not counted")


@dataclass(frozen=True)
class Seeded:
    url: str
    preset: str
    labelled: int


async def _seed(tmp_path: Path) -> Seeded:
    """A settled history, then readers' thumbs on three of one preset's results and one
    rehearsal."""
    url = f"sqlite+aiosqlite:///{tmp_path}/feedback.db"
    db = Database(url)
    await db.upgrade()
    planted = ending_now(history(JUDGES, seed=5, debates=40), utcnow())
    clock = Clock(planted[0].finished_at)
    rt = runtime(db, rehearsal_settings(database_url=url, reviewers=REVIEWER,
                                        spot_check_fraction=0.0))
    rt.service.clock = clock
    await settle_history(rt.reviews, clock, planted)
    clock.now = utcnow()
    before = await rt.service.oversight.judge_report()
    preset = planted[0].preset or "decision"
    mine = [p for p in planted if (p.preset or "decision") == preset]
    published = [p for p in mine if p.review is None][:2]
    routed = [p for p in mine if p.review is not None][:1]
    assert len(published) == 2 and len(routed) == 1
    desk = FeedbackDesk(rt.service)
    for panel, thumbs in ((published[0], "uud"), (published[1], "d"), (routed[0], "du")):
        for n, thumb in enumerate(thumbs):
            await desk.give(panel.debate_id, user=f"UREADER{n}", workspace=None,
                            rating="up" if thumb == "u" else "down", surface="test")
    await _rehearsal(rt.service, mine[-1], clock, desk)
    after = await rt.service.oversight.judge_report()
    assert after.labelled == before.labelled and after.debates == before.debates
    assert [j.reviewer_agreement for j in after.judges] == \
        [j.reviewer_agreement for j in before.judges]   # thumbs are not reviewer labels
    await db.dispose()
    return Seeded(url, preset, before.labelled)


async def _rehearsal(service: object, like: PanelRecord, clock: Clock,
                     desk: FeedbackDesk) -> None:
    result = judged_result(like, alpha=0.9, routing=Routing.AUTO_APPROVE).model_copy(
        update={"id": "rehearsed", "rehearsal": True})
    await add_running(desk.service, "rehearsed", result.preset or "decision",
                      clock.now - timedelta(minutes=5))
    await desk.service.finish("rehearsed", result, actor="worker-test")
    await desk.give("rehearsed", user="UREADER0", workspace=None, rating="up")


def _counts(item: dict[str, object]) -> dict[str, object]:
    return {k: item[k] for k in ("up", "down", "rated", "agreeing", "rehearsal", "agreement")}


EXPECTED = {"up": 3, "down": 3, "rated": 2, "agreeing": 1, "rehearsal": 1, "agreement": 0.5}


async def test_the_api_and_the_page_show_feedback_per_preset(tmp_path: Path) -> None:
    seeded = await _seed(tmp_path)
    db = Database(seeded.url)
    settings = rehearsal_settings(database_url=seeded.url, api_token=TOKEN, reviewers=REVIEWER)
    try:
        async with served(db, settings, workers=0) as (root, _, _), \
                aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
            base = root.rstrip("/")
            status, judges = await call(s, "GET", f"{base}/api/judges", headers=API)
            assert status == 200
            assert [_counts(f) for f in judges["feedback"] if f["preset"] == seeded.preset] \
                == [EXPECTED]
            assert judges["labelled"] == seeded.labelled
            status, routing = await call(s, "GET", f"{base}/api/routing", headers=API)
            assert status == 200
            found = [p["feedback"] for p in routing["routing"]["presets"]
                     if p["routing"]["preset"] == seeded.preset]
            assert [_counts(f) for f in found] == [EXPECTED]
            async with s.get(f"{base}/?token={TOKEN}") as signed_in:
                assert signed_in.status == 200
            async with s.get(f"{base}/judges") as reply:
                page = await reply.text()
    finally:
        await db.dispose()
    assert "Readers’ feedback" in page and page.count(LINE) == 2   # the audit and the card


async def test_the_terminal_shows_feedback_in_both_reports(cli: Cli, tmp_path: Path) -> None:
    seeded = await _seed(tmp_path)
    env = {"DATABASE_URL": seeded.url}
    done = await asyncio.to_thread(cli, "judges", "report", env=env)
    assert done.returncode == 0, done.stderr
    assert "readers' feedback (not reviewer labels):" in done.stdout
    assert f"{seeded.preset:<12} {LINE}" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "show", env=env)
    assert done.returncode == 0, done.stderr
    assert f"readers' feedback: {LINE}" in done.stdout
    done = await asyncio.to_thread(cli, "thresholds", "show", "--json", env=env)
    data = json.loads(done.stdout)
    found = [p["feedback"] for p in data["routing"]["presets"]
             if p["routing"]["preset"] == seeded.preset]
    assert [_counts(f) for f in found] == [EXPECTED]


async def test_a_preset_without_a_panel_shows_its_feedback_in_the_routing_audit(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thumbs on a mode without judges (nothing routed, nothing for a reviewer) still show in
    `/api/routing` and `thresholds show`, with a note that there is no routing to agree with."""
    config = tmp_path / "dialectic.toml"
    config.write_text('[presets.critic]\nmode = "critique"\n')
    monkeypatch.setenv("DIALECTIC_CONFIG", str(config))
    url = f"sqlite+aiosqlite:///{tmp_path}/panelless.db"
    db = Database(url)
    await db.upgrade()
    try:
        rt = runtime(db, rehearsal_settings(database_url=url))
        desk = FeedbackDesk(rt.service)
        for name, rehearsal in (("critiqued", False), ("rehearsed", True)):
            await add_running(rt.service, name, "critic", utcnow() - timedelta(minutes=5))
            await rt.service.finish(name, _critique(name, rehearsal=rehearsal),
                                    actor="worker-test")
        for user in ("UREADER0", "UREADER1"):
            await desk.give("critiqued", user=user, workspace=None, rating="up")
        await desk.give("rehearsed", user="UREADER0", workspace=None, rating="down")
        report = await rt.service.oversight.routing_report()
        counts = next(i.feedback for i in report.presets if i.routing.preset == "critic")
        assert (counts.up, counts.down, counts.unrouted, counts.rehearsal) == (2, 0, 1, 1)
        assert counts.rated == 0 and counts.agreement is None
        judged = next(i.routing for i in report.presets if i.routing.preset == "critic")
        assert sum(judged.results.values()) == 0   # nothing routed: the card says "no data"
    finally:
        await db.dispose()
    done = await asyncio.to_thread(cli, "thresholds", "show", "--json",
                                   env={"DATABASE_URL": url, "DIALECTIC_CONFIG": str(config)})
    assert done.returncode == 0, done.stderr
    found = [p["feedback"] for p in json.loads(done.stdout)["routing"]["presets"]
             if p["routing"]["preset"] == "critic"]
    assert [(f["up"], f["unrouted"]) for f in found] == [(2, 1)]
    done = await asyncio.to_thread(cli, "thresholds", "show",
                                   env={"DATABASE_URL": url, "DIALECTIC_CONFIG": str(config)})
    assert ("readers' feedback: 👍 2 · 👎 0 · no routing to agree with (1 result(s) of a mode "
            "without a judge panel) · 1 on rehearsals, not counted") in done.stdout


def _critique(debate_id: str, *, rehearsal: bool) -> DebateResult:
    """A finished critique: no panel, so no routing."""
    return DebateResult(id=debate_id, status=ResultStatus.COMPLETED, mode=Mode.CRITIQUE,
                        topic=f"Synthetic critique {debate_id}", preset="critic",
                        verdict="revise the proposal", routing=Routing.NONE, complete=True,
                        rehearsal=rehearsal)
