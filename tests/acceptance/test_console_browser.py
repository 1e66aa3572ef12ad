"""The console in a real headless Chromium: start a debate from the form and watch it arrive
live over SSE (the page changes without a reload), read the judges' heatmap and the result,
decide a review as a signed-in reviewer, and use it on a phone (390 px) and from the keyboard;
every page passes axe-core with no serious or critical violation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from selenium import webdriver

from bot.scheduling import workspace as wsched
from bot.scheduling.workspace import parse_form
from bot.service.grants import reviewer_grant
from bot.service.runtime import Runtime
from bot.settings import Settings
from engine.domain import DebateRequest
from engine.vocabulary import Mode
from storage import audit
from storage.db import Database
from storage.records import DebateStatus, Origin, ReviewStatus
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.openai_server import FakeOpenAI
from tests.support.browser_fixtures import PHONE, Browser, chromium, describe
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings, running_worker, wait_done

__all__ = ["chromium"]  # fixture

TOKEN = "browser-test-token"
REVIEWER = "UREVIEWER"
TOPIC = "Should we move billing to PostgreSQL?"
#: a topic on which the offline model's red team and strategist find no consensus (the offline
#: model is seeded by the prompt): the debate waits for a reviewer
SPLIT_TOPIC = "Should we move billing to PostgreSQL (red team)?"
RECORD_PROGRESS = """
window.__marker = 'no reload';
window.__seen = [];
const box = document.getElementById('debate');
const note = () => { const line = document.getElementById('progress-line');
  if (line) window.__seen.push(line.textContent); };
note();
new MutationObserver(note).observe(box, {childList: true, subtree: true});
"""


@pytest.fixture
async def live_stack(sqlite_db: Database, chromium: webdriver.Chrome
                     ) -> AsyncIterator[tuple[Browser, Runtime]]:
    """The console over a provider that takes a moment per call (so phases arrive one by one),
    no worker yet; the browser forgets the last test's cookies."""
    async with FakeOpenAI(latency=0.25) as fake:
        settings = Settings(openai_api_key=TEST_API_KEY, openai_base_url=fake.base_url,
                            poll_interval=0.05, lease_seconds=5.0, daily_budget_usd=10.0,
                            backoff_base=0.01, backoff_cap=0.05)
        async with served(sqlite_db, settings, workers=0) as (base, rt, _):
            browser = Browser(chromium, base.rstrip("/"))
            await browser.forget()
            yield browser, rt


@pytest.fixture
async def review_stack(sqlite_db: Database, chromium: webdriver.Chrome
                       ) -> AsyncIterator[tuple[Browser, Runtime, Settings]]:
    """A token-protected console with one configured reviewer, in rehearsal mode."""
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER)
    async with served(sqlite_db, settings) as (base, rt, _):
        browser = Browser(chromium, base.rstrip("/"))
        await browser.forget()
        yield browser, rt, settings


async def test_start_from_the_form_and_watch_the_debate_arrive_live(
        live_stack: tuple[Browser, Runtime]) -> None:
    browser, rt = live_stack
    await browser.goto("/")
    preset = await browser.find("#preset")
    assert await browser.run(preset.get_attribute, "value") == "default"
    for control in ("topic", "preset", "mode"):   # every control has its label
        assert await browser.find_all(f"label[for={control}]")
    topic = await browser.find("#topic")
    await browser.run(topic.send_keys, TOPIC)
    estimate = await browser.wait_js("document.getElementById('estimate').dataset.ready",
                                     "the estimate")
    assert estimate and "calls" in await browser.text("#estimate")
    await browser.run((await browser.find("#start-button")).click)
    await browser.wait_js("location.pathname.startsWith('/debates/')", "the debate's page")
    assert "Queued" in await browser.text("#progress-line")
    await browser.js(RECORD_PROGRESS)
    async with running_worker(rt.service):
        await browser.wait_js("document.querySelector('.verdict') !== null", "the verdict")
        await browser.wait_js("document.getElementById('debate').dataset.stream === 'closed'",
                              "the stream to close once settled")
    seen: list[str] = await browser.js("return window.__seen")
    assert await browser.js("return window.__marker") == "no reload"
    assert any(s.startswith("Running:") for s in seen), seen
    assert seen[-1].startswith("Finished:"), seen
    assert int(await browser.js("return document.getElementById('debate').dataset.updates")) >= 2
    record = (await rt.service.recent(limit=1))[0]
    assert record.request.topic == TOPIC and record.preset == "default"
    await _check_the_judges(browser, record.result)
    # the same question again: the form says the finished debate answers it, at no cost
    await browser.goto("/")
    await browser.run((await browser.find("#topic")).send_keys, TOPIC)
    await browser.wait_js("document.getElementById('estimate').dataset.ready", "the estimate")
    said = await browser.text("#estimate")
    assert f"Answered by debate {record.id}" in said and "no new calls, $0" in said, said


async def _check_the_judges(browser: Browser, result: Any) -> None:
    consensus = result.consensus
    cells = await browser.find_all("svg.heatmap g rect")
    assert len(cells) == len(consensus.judges) * len(consensus.items)
    rows = await browser.find_all("table.judges tbody tr")
    assert len(rows) == len(consensus.judges)
    await browser.find("svg.scale")
    # read in one step: a live page may swap the element between a find and a read
    label = await browser.js("return document.querySelector('svg.scale')"
                             ".getAttribute('aria-label')")
    assert label.startswith("Krippendorff's alpha ")
    assert "Rehearsal mode" not in await browser.text("main")
    assert not await browser.find_all("pre"), "no raw JSON on the page"
    assert await browser.find_all("a[download]")


async def _awaiting_review(rt: Runtime) -> str:
    """A redteam debate the rehearsal synthesizer cannot agree on: it waits for a reviewer."""
    sub = await rt.service.submit(DebateRequest(topic=SPLIT_TOPIC, mode=Mode.REDTEAM),
                                  origin=Origin(surface="api"))
    async with running_worker(rt.service):
        record = await wait_done(rt.service, sub.record.id)
    assert record.status is DebateStatus.AWAITING_REVIEW
    return record.id


async def test_a_reviewer_decides_in_the_browser(
        review_stack: tuple[Browser, Runtime, Settings]) -> None:
    browser, rt, settings = review_stack
    debate_id = await _awaiting_review(rt)
    await browser.goto("/")
    assert await browser.text("h1") == "Sign in to the console"
    grant = reviewer_grant(settings.service, REVIEWER)
    await browser.sign_in_by_link(grant)
    await browser.wait_js("location.pathname === '/reviews'", "the review queue")
    await browser.run((await browser.find(f"a[href='/debates/{debate_id}']")).click)
    await browser.wait_js("document.querySelector('form.decide') !== null", "the decision form")
    await browser.run((await browser.find("button[value=escalate]")).click)
    alert = await browser.wait_js(
        "document.querySelector('form.decide [role=alert]').hidden === false", "the refusal")
    assert alert and "Say why you escalate" in await browser.text("form.decide [role=alert]")
    await browser.run((await browser.find("#reason")).send_keys, "the policy text is unclear")
    await browser.run((await browser.find("button[value=escalate]")).click)
    await browser.wait_js("document.querySelector('form.decide') === null", "the decision")
    assert f"Decided: escalated by {REVIEWER}" in await browser.text("#review-h + p")
    review = await rt.reviews.for_debate(debate_id)
    assert review is not None and review.status is ReviewStatus.ESCALATED
    assert (await rt.service.get(debate_id)).status is DebateStatus.ESCALATED
    async with rt.db.transaction(readonly=True) as session:
        kinds = [(e.kind, e.actor) for e in await audit.events(session, debate_id)]
    assert ("review_decided", REVIEWER) in kinds


async def test_phone_keyboard_and_accessibility(
        review_stack: tuple[Browser, Runtime, Settings]) -> None:
    browser, rt, settings = review_stack
    debate_id = await _awaiting_review(rt)
    await browser.sign_in_by_link(reviewer_grant(settings.service, REVIEWER))
    await browser.wait_js("location.pathname === '/reviews'", "the review queue")
    pages = ["/", f"/debates/{debate_id}", "/reviews", "/signin"]
    for path in pages:
        await browser.goto(path)
        violations = await browser.axe()
        assert not violations, f"{path}:\n{describe(violations)}"
    for path in pages:
        await browser.resize(PHONE, mobile=True)
        await browser.goto(path)
        width = await browser.js("return [window.innerWidth, "
                                 "document.documentElement.scrollWidth]")
        assert width == [PHONE[0], PHONE[0]], f"{path} is {width} wide on a phone"
        size = await browser.js("return parseFloat(getComputedStyle(document.body).fontSize)")
        assert size >= 16
    await browser.resize((1280, 900))
    await browser.goto("/")
    await browser.run((await browser.find("body")).send_keys, "\ue004")   # Tab
    focused = await browser.js("return document.activeElement.textContent")
    assert focused == "Skip to content"


OVERFLOWING = """return [...document.querySelectorAll('main table, main svg, main pre, main figure')
  ]
  .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5
               || e.scrollWidth > e.clientWidth + 1)
  .map(e => e.tagName + ' ' + (e.getAttribute('class') || ''))"""


@pytest.mark.parametrize("mode", list(Mode))
async def test_every_mode_fits_a_phone(review_stack: tuple[Browser, Runtime, Settings],
                                       mode: Mode) -> None:
    """On a 390 px phone nothing on a debate page runs past the right edge: the heatmap stacks a
    picture per side, the round tables become cards."""
    browser, rt, _ = review_stack
    sub = await rt.service.submit(DebateRequest(topic=f"{TOPIC} ({mode.value})", mode=mode),
                                  origin=Origin(surface="api"))
    async with running_worker(rt.service):
        await wait_done(rt.service, sub.record.id)
    await browser.resize(PHONE, mobile=True)
    try:
        await browser.goto(f"/?token={TOKEN}")
        await browser.goto(f"/debates/{sub.record.id}")
        await browser.wait_js("document.querySelector('#judges-h, #outcome-h') !== null",
                              "the result")
        assert await browser.js(OVERFLOWING) == []
        if mode is Mode.CONSENSUS:
            assert len(await browser.find_all("svg.heatmap")) >= 3   # pro, con, claims
    finally:
        await browser.resize((1280, 900))


async def test_a_workspaces_settings_and_schedules_fit_a_phone(
        review_stack: tuple[Browser, Runtime, Settings]) -> None:
    """The operator's pages of one workspace: the schedules table becomes cards on a 390 px
    phone (nothing past the right edge), and both pages pass axe."""
    browser, rt, _ = review_stack
    fields = parse_form({"name": "morning", "preset": "market", "topics": "Will the ECB cut "
                         "rates in December?\nBrent crude breaks $90 this week?",
                         "cron": "0 8 * * 1-5", "timezone": "Europe/Paris",
                         "channel": "C0123ABC"}, presets=["market"])
    await wsched.add(rt.db, "T0123ABC", fields, by="operator", admin=True,
                     now=rt.service.clock())
    await browser.resize(PHONE, mobile=True)
    try:
        await browser.goto(f"/?token={TOKEN}")
        for path in ("/workspaces/T0123ABC/schedules", "/workspaces/T0123ABC/settings"):
            await browser.goto(path)
            assert "T0123ABC" in await browser.text("h1"), path
            assert await browser.js(OVERFLOWING) == [], path
            width = await browser.js("return [window.innerWidth, "
                                     "document.documentElement.scrollWidth]")
            assert width == [PHONE[0], PHONE[0]], f"{path} is {width} wide on a phone"
            violations = await browser.axe()
            assert not violations, f"{path}:\n{describe(violations)}"
    finally:
        await browser.resize((1280, 900))
