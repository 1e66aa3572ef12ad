"""`make screenshots`: every console page in headless Chromium at 1280 px and at 390 px (as a
phone), written as PNGs for people to look at (the README shows two of them).

    scripts/with-browser.sh python -m tests.screenshots [DIR]   # default docs/screenshots

Runs the whole service in this process on a throwaway SQLite database, in rehearsal mode (no
model, nothing leaves the machine): one debate per mode, one waiting for a reviewer, a reviewer
signed in with a link.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from bot.service.grants import reviewer_grant
from engine.domain import DebateRequest
from engine.vocabulary import Mode
from storage.db import Database
from storage.records import Origin
from tests.browser_fixtures import DESKTOP, PHONE, Browser, start_chromium
from tests.http_fixtures import free_port, served
from tests.service_fixtures import rehearsal_settings, running_worker, wait_done

TOPICS = {
    Mode.CONSENSUS: "Should we move billing to PostgreSQL?",
    Mode.PANEL: "What should our on-call rotation look like for a team of six?",
    Mode.CRITIQUE: "Draft our incident-review policy",
    Mode.REDTEAM: "Should we move billing to PostgreSQL (red team)?",   # waits for a reviewer
}


async def shoot(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/screens.db"
        db = Database(url)
        await db.upgrade()
        port = free_port()
        settings = rehearsal_settings(database_url=url, api_token="screenshots",
                                      reviewers="U0REVIEWER",
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
                pages = {"index": "/", "reviews": "/reviews", "signin": "/signin",
                         **{f"debate-{m.value}": f"/debates/{i}" for m, i in ids.items()}}
                pages["debate"] = pages.pop("debate-consensus")
                grant = reviewer_grant(settings.service, "U0REVIEWER")
                return await asyncio.to_thread(_capture, base.rstrip("/"), grant, pages, out)
        finally:
            await db.dispose()


def _capture(base: str, grant: str, pages: dict[str, str], out: Path) -> list[Path]:
    driver = start_chromium()
    try:
        return asyncio.run(_capture_all(Browser(driver, base), grant, pages, out))
    finally:
        driver.quit()


async def _capture_all(browser: Browser, grant: str, pages: dict[str, str], out: Path
                       ) -> list[Path]:
    await browser.goto(f"/signin/link?grant={grant}")
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
