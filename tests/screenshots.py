"""`make screenshots`: every console page in headless Chromium at 1280 px and at 390 px (as a
phone), written as PNGs for people to look at (the README and docs/console.md show them).

    scripts/with-browser.sh python -m tests.screenshots [DIR]   # default docs/screenshots

Runs the whole service in this process on a throwaway SQLite database, in rehearsal mode (no
model, nothing leaves the machine): one debate per mode, one waiting for a reviewer, a reviewer
signed in with a link. The Judges page reads a synthetic judged history written through the
service (tests/support/audit_fixtures.py: a judge that favours Position A, one that loves
length, a harsh one), settled and reviewed as real debates are, since rehearsals are left out of
the audit.

It also draws docs/tracing.md's picture, trace-waterfall.png (and -390.png, as a phone): the
spans of a real consensus debate (the real gateway against the fake provider at 0.2 s a call,
one call retried and one judge refused, tests/waterfall.py), rendered as a waterfall page
(tests/waterfall_page.py).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from bot.service.evaluations import EvalSpec, Evaluations
from bot.service.grants import reviewer_grant
from bot.service.runtime import Runtime
from engine.domain import DebateRequest, utcnow
from engine.evaluation.builtin import arithmetic
from engine.vocabulary import Mode
from storage.db import Database
from storage.records import Origin
from tests.support.audit_fixtures import SyntheticJudge, history
from tests.support.browser_fixtures import DESKTOP, PHONE, Browser, start_chromium
from tests.support.http_fixtures import free_port, served
from tests.support.oversight_fixtures import REVIEWER, Clock, ending_now, settle_history
from tests.support.service_fixtures import rehearsal_settings, running_worker, wait_done
from tests.waterfall import shown_faults, trace
from tests.waterfall_page import page

TOPICS = {
    Mode.CONSENSUS: "Should we move billing to PostgreSQL?",
    Mode.PANEL: "What should our on-call rotation look like for a team of six?",
    Mode.CRITIQUE: "Draft our incident-review policy",
    Mode.REDTEAM: "Should we move billing to PostgreSQL (red team)?",   # waits for a reviewer
}


async def shoot(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        spans = await trace("consensus", topic="Should we move billing to PostgreSQL?",
                            faults=shown_faults)
        waterfall = Path(tmp) / "trace-waterfall.html"
        waterfall.write_text(page(spans, title="A consensus debate's trace",
                                  source="the fake provider at 0.2 s a call"))
        url = f"sqlite+aiosqlite:///{tmp}/screens.db"
        db = Database(url)
        await db.upgrade()
        port = free_port()
        settings = rehearsal_settings(database_url=url, api_token="screenshots",
                                      reviewers=REVIEWER, spot_check_fraction=0.05,
                                      public_url=f"http://127.0.0.1:{port}")
        try:
            async with served(db, settings, workers=0, port=port) as (base, rt, _):
                ids = {}
                for mode, topic in TOPICS.items():
                    sub = await rt.service.submit(DebateRequest(topic=topic, mode=mode),
                                                  origin=Origin(surface="api"))
                    ids[mode] = sub.record.id
                async with running_worker(rt.service):
                    for debate_id in ids.values():
                        await wait_done(rt.service, debate_id)
                await _judged_history(rt)
                evaluation = await _evaluation(rt)
                pages = {"index": "/", "reviews": "/reviews", "judges": "/judges",
                         "signin": "/signin", "evaluations": "/evaluations",
                         "evaluation": f"/evaluations/{evaluation}",
                         **{f"debate-{m.value}": f"/debates/{i}" for m, i in ids.items()}}
                pages["debate"] = pages.pop("debate-consensus")
                grant = reviewer_grant(settings.service, REVIEWER)
                return await asyncio.to_thread(_capture, base.rstrip("/"), grant, pages, out,
                                               waterfall)
        finally:
            await db.dispose()


async def _evaluation(rt: Runtime) -> str:
    """One rehearsal evaluation (the Evaluations pages say so): arithmetic, three modes."""
    evals = Evaluations(rt.service)
    spec = evals.check(EvalSpec(dataset=arithmetic(10, 1), modes=("single", "vote", "panel"),
                                samples=3))
    return (await evals.execute(await evals.start(spec, await evals.preflight(spec)),
                                spec)).run.id


async def _judged_history(rt: Runtime) -> None:
    """Two hundred judged debates ending now, settled and reviewed through the service."""
    judges = [SyntheticJudge(name="technical"), SyntheticJudge(name="business", habit="first"),
              SyntheticJudge(name="risk", habit="harsh"),
              SyntheticJudge(name="general", habit="verbose")]
    planted = ending_now(history(judges, seed=31, debates=200), utcnow())
    service_clock = rt.service.clock
    clock = Clock(planted[0].finished_at)
    rt.service.clock = clock
    try:
        await settle_history(rt.reviews, clock, planted)
    finally:
        rt.service.clock = service_clock


def _capture(base: str, grant: str, pages: dict[str, str], out: Path, waterfall: Path
             ) -> list[Path]:
    driver = start_chromium()
    try:
        written = asyncio.run(_capture_all(Browser(driver, base), grant, pages, out))
        return written + asyncio.run(_capture_file(Browser(driver, ""), waterfall, out))
    finally:
        driver.quit()


async def _capture_file(browser: Browser, html: Path, out: Path) -> list[Path]:
    """A page from a file (the trace's waterfall) at both sizes: NAME.png and NAME-390.png."""
    written = []
    for size, mobile in ((DESKTOP, False), (PHONE, True)):
        await browser.resize(size, mobile=mobile)
        await browser.goto(html.resolve().as_uri())
        target = out / (f"{html.stem}-{size[0]}.png" if mobile else f"{html.stem}.png")
        await browser.screenshot(target, size, mobile=mobile)
        written.append(target)
    return written


async def _capture_all(browser: Browser, grant: str, pages: dict[str, str], out: Path
                       ) -> list[Path]:
    await browser.sign_in_by_link(grant)
    written = []
    for name, path in pages.items():
        for size, mobile in ((DESKTOP, False), (PHONE, True)):
            await browser.resize(size, mobile=mobile)
            await browser.goto(path)
            target = out / f"{name}-{size[0]}.png"
            await browser.screenshot(target, size, mobile=mobile)
            written.append(target)
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs/screenshots")
    for path in asyncio.run(shoot(out)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
