"""A decision the judges split on and a one-page brief, looked at in a real headless Chromium:
the flag and the brief are on the page, it passes axe-core with no serious or critical
violation, and it fits a phone's width (390 px) without scrolling sideways."""

from __future__ import annotations

import pytest
from selenium import webdriver

from bot.settings import load_settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import Origin
from tests.fakes.openai_server import FakeOpenAI
from tests.support.browser_fixtures import PHONE, Browser, chromium, describe
from tests.support.http_fixtures import served
from tests.support.preset_fixtures import script
from tests.support.service_fixtures import wait_done

__all__ = ["chromium"]  # fixture
pytestmark = pytest.mark.integration

SEEN = {"decision": "Needs human discussion", "brief": "Decision brief"}


async def test_the_decision_and_brief_pages_in_a_browser(sqlite_db: Database,
                                                         chromium: webdriver.Chrome) -> None:
    async with FakeOpenAI() as fake:
        script(fake, "split")
        settings = load_settings({"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake.base_url,
                                  "DIALECTIC_POLL_INTERVAL": "0.05",
                                  "DIALECTIC_CONFIG": "/dev/null"})
        async with served(sqlite_db, settings) as (base, rt, _):
            browser = Browser(chromium, base.rstrip("/"))
            await browser.forget()
            for preset, words in SEEN.items():
                made = await rt.service.submit(DebateRequest(topic=f"Adopt Kafka ({preset})?",
                                                             preset=preset),
                                               origin=Origin(surface="api"))
                await wait_done(rt.service, made.record.id, timeout=60)
                path = f"/debates/{made.record.id}"
                await browser.resize((1280, 900))
                await browser.goto(path)
                text = await browser.js("return document.body.innerText")
                assert words in text and "Contested" in text
                violations = await browser.axe()
                assert not violations, f"{path}:\n{describe(violations)}"
                await browser.resize(PHONE, mobile=True)
                await browser.goto(path)
                width = await browser.js("return [window.innerWidth, "
                                         "document.documentElement.scrollWidth]")
                assert width == [PHONE[0], PHONE[0]], f"{preset} is {width} wide on a phone"
