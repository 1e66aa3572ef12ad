"""The Evaluations pages in a real headless Chromium, at 1280 px and on a 390 px phone: the
report's figures are there, nothing runs past the right edge, and axe-core finds no serious or
critical violation."""

from __future__ import annotations

import pytest
from selenium import webdriver

from bot.service.evaluations import EvalSpec, Evaluations
from bot.settings import Settings
from engine.evaluation.builtin import arithmetic
from storage.db import Database
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.knowing import Knowing
from tests.fakes.openai_server import FakeOpenAI
from tests.support.browser_fixtures import DESKTOP, PHONE, Browser, chromium, describe
from tests.support.http_fixtures import served

__all__ = ["chromium"]  # fixture

OVERFLOWING = """return [...document.querySelectorAll('main table, main tbody th, main td, main p')]
  .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5
               || e.scrollWidth > e.clientWidth + 1)
  .map(e => e.tagName + ' ' + (e.getAttribute('class') || ''))"""


@pytest.mark.parametrize(("size", "mobile"), [(DESKTOP, False), (PHONE, True)])
async def test_the_evaluation_pages_read_on_a_desktop_and_a_phone(
        sqlite_db: Database, chromium: webdriver.Chrome, size: tuple[int, int],
        mobile: bool) -> None:
    dataset = arithmetic(12, 9)
    async with FakeOpenAI() as fake:
        Knowing({i.question: i.answer for i in dataset.items}, p=0.7).install(fake)
        settings = Settings(openai_api_key=TEST_API_KEY, openai_base_url=fake.base_url,
                            poll_interval=0.05, lease_seconds=5.0, daily_budget_usd=10.0,
                            backoff_base=0.01, backoff_cap=0.05)
        async with served(sqlite_db, settings, workers=0) as (base, rt, _):
            evals = Evaluations(rt.service)
            spec = evals.check(EvalSpec(dataset=dataset, modes=("single", "vote", "panel"),
                                        samples=3))
            run = (await evals.execute(await evals.start(spec, await evals.preflight(spec)),
                                       spec)).run
            browser = Browser(chromium, base.rstrip("/"))
            await browser.forget()
            await browser.resize(size, mobile=mobile)
            for path in ("/evaluations", f"/evaluations/{run.id}"):
                await browser.goto(path)
                assert not await browser.js(OVERFLOWING), path
                width = await browser.js("return [window.innerWidth, "
                                         "document.documentElement.scrollWidth]")
                assert width == [size[0], size[0]], f"{path} is {width} wide"
                violations = await browser.axe()
                assert not violations, f"{path}:\n{describe(violations)}"
            rows = await browser.find_all("main table tbody tr")
            text = await browser.text("main")
            await browser.resize(DESKTOP)
    assert len(rows) == 3
    assert "Accuracy and cost per mode" in text and "Paired comparisons" in text
    assert "panel against single" in text.replace("\n", " ")
