"""Issue 22 in a real headless Chromium: signing in with a disguised target (`/%09/other`) stays
on this origin; another origin (a second loopback server) framing a console page gets nothing;
the console's pages run under the Content-Security-Policy with no violation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from selenium import webdriver
from selenium.webdriver.common.by import By

from bot.service.grants import reviewer_grant
from engine.domain import DebateRequest
from engine.vocabulary import Mode
from storage.db import Database
from storage.records import Origin
from tests.support.browser_fixtures import Browser, chromium
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings, running_worker, wait_done

__all__ = ["chromium"]  # fixture

TOKEN = "browser-hardening-token"
REVIEWER = "UREVIEWER"
TOPIC = "Should we move billing to PostgreSQL?"
OTHER_PAGE = "<!doctype html><title>Other</title><p id=other>another origin</p>"
#: records every CSP violation of every page from its first byte, before any of its scripts
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@asynccontextmanager
async def other_origin(page: str = OTHER_PAGE) -> AsyncIterator[str]:
    """Another site, on another loopback port, answering `page` (and OTHER_PAGE at /own): its
    base URL."""
    async def serve(request: web.Request) -> web.Response:
        text = OTHER_PAGE if request.path == "/own" else page
        return web.Response(text=text, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@pytest.mark.parametrize("disguise", ["/%09/{host}/", "/%0A/{host}/", "/%5C{host}/",
                                      "%5C/{host}/", "/%0D%0A/{host}/"])
async def test_a_disguised_target_after_sign_in_stays_on_this_origin(
        sqlite_db: Database, chromium: webdriver.Chrome, disguise: str) -> None:
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER)
    grant = reviewer_grant(settings.service, REVIEWER)
    async with served(sqlite_db, settings) as (base, _, _), other_origin() as other:
        browser = Browser(chromium, base.rstrip("/"))
        await browser.forget()
        target = disguise.format(host=other.removeprefix("http://"))
        await browser.sign_in_by_link(grant, to=target)
        assert "signed in as reviewer" in await browser.text("main")
        # the page continues after a second: wait until it has gone somewhere
        await browser.wait_js("!document.getElementById('continue')", "the continuation")
        origin = await browser.js("return location.origin")
        assert origin == browser.base, f"sent to {origin}"
        assert not await browser.find_all("#other")


async def test_another_origin_framing_a_console_page_gets_nothing(
        sqlite_db: Database, chromium: webdriver.Chrome) -> None:
    async with served(sqlite_db, rehearsal_settings()) as (base, rt, _):
        browser = Browser(chromium, base.rstrip("/"))
        await browser.forget()
        record = (await rt.service.submit(DebateRequest(topic=TOPIC, mode=Mode.SIMPLE),
                                          origin=Origin(surface="api"))).record
        page = f"{browser.base}/debates/{record.id}"
        framing = (f'<!doctype html><title>Framer</title><iframe id="f" src="{page}" '
                   'width="800" height="600"></iframe><iframe id="own" src="/own"></iframe>')
        async with other_origin(framing) as other:
            await browser.run(chromium.get, f"{other}/framer")
            own = await browser.find("#own")  # a frame of its own origin shows its content
            await browser.run(chromium.switch_to.frame, own)
            try:
                assert await browser.find("#other")
            finally:
                await browser.run(chromium.switch_to.default_content)
            frame = await browser.find("#f")
            await browser.run(chromium.switch_to.frame, frame)
            try:
                shown = await browser.run(
                    lambda: chromium.find_element(By.TAG_NAME, "html").text)
            finally:
                await browser.run(chromium.switch_to.default_content)
        assert TOPIC not in shown and "Dialectic" not in shown, shown[:300]
        await browser.goto(f"/debates/{record.id}")  # the same page, not framed, shows
        assert TOPIC in await browser.text("main")


async def test_the_console_runs_under_its_content_security_policy(
        sqlite_db: Database, chromium: webdriver.Chrome) -> None:
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER)
    async with served(sqlite_db, settings, workers=0) as (base, rt, _):
        browser = Browser(chromium, base.rstrip("/"))
        await browser.forget()
        script = await browser.run(chromium.execute_cdp_cmd,
                                   "Page.addScriptToEvaluateOnNewDocument",
                                   {"source": RECORD_VIOLATIONS})
        try:
            record = (await rt.service.submit(DebateRequest(topic=TOPIC, mode=Mode.PANEL),
                                              origin=Origin(surface="api"))).record
            async with running_worker(rt.service):
                await wait_done(rt.service, record.id)
            await browser.goto(f"/?token={TOKEN}")
            await browser.goto("/")
            await browser.find("#start")
            await browser.goto(f"/debates/{record.id}")
            await browser.find(".bar")  # the panel's agreement bars, drawn without inline style
            fill = await browser.js("return getComputedStyle(document.querySelector"
                                    "('.bar-fill')).fill")
            assert fill not in ("", "none", "rgb(0, 0, 0)"), fill
            violations = await browser.js("return window.__csp")
            for path in ("/reviews", "/judges", "/signin"):
                await browser.goto(path)
                await browser.find("main")
                violations += await browser.js("return window.__csp")
            assert violations == []
            assert await browser.js("return document.querySelectorAll('[style]').length") == 0
        finally:
            await browser.run(chromium.execute_cdp_cmd,
                              "Page.removeScriptToEvaluateOnNewDocument",
                              {"identifier": script["identifier"]})
