"""A real headless Chromium driving the console (selenium over Debian's chromedriver), for the
browser tests and `make screenshots`. `scripts/with-browser.sh` installs the browser and axe-core
and says where they are; without it the browser tests are skipped, saying so.

The server under test runs on this test's event loop; every browser call goes through
`asyncio.to_thread`, so the server answers while the browser waits.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import JavascriptException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

CHROMIUM_ENV, DRIVER_ENV, AXE_ENV = ("DIALECTIC_TEST_CHROMIUM", "DIALECTIC_TEST_CHROMEDRIVER",
                                     "DIALECTIC_TEST_AXE")
DESKTOP, PHONE = (1280, 900), (390, 844)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-extensions",
                  "--disable-default-apps", "--mute-audio", "--hide-scrollbars")
#: axe-core's impacts a page must not have
BLOCKING = ("serious", "critical")


def start_chromium() -> webdriver.Chrome:
    """A fresh headless Chromium with its own profile directory; the caller quits it."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ[CHROMIUM_ENV]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='dialectic-chromium-')}")
    options.add_argument(f"--window-size={DESKTOP[0]},{DESKTOP[1]}")
    return webdriver.Chrome(service=Service(os.environ[DRIVER_ENV]), options=options)


@pytest.fixture(scope="session")
def chromium() -> Iterator[webdriver.Chrome]:
    """One browser for the session (starting one costs a second or two of a small machine)."""
    if not os.environ.get(CHROMIUM_ENV) or not os.environ.get(DRIVER_ENV):
        pytest.skip(f"{CHROMIUM_ENV} is not set: run the suite under scripts/with-browser.sh "
                    "(make test does)")
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Browser:
    """The browser, driven from async tests: each call runs in a thread."""

    driver: webdriver.Chrome
    base: str

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    async def goto(self, path: str) -> None:
        await self.run(self.driver.get, self.base + path)

    async def sign_in_by_link(self, grant: str, to: str = "") -> None:
        """Open a reviewer link and press its button (the link alone signs nobody in)."""
        await self.goto(f"/signin/link?grant={grant}" + (f"&to={to}" if to else ""))
        await self.run((await self.find("#sign-in")).click)
        await self.wait_js("document.getElementById('sign-in') === null", "the button's answer")

    async def js(self, script: str, *args: Any) -> Any:
        return await self.run(self.driver.execute_script, script, *args)

    async def find(self, css: str) -> WebElement:
        return await self.wait_for(lambda: self._first(css), f"an element {css!r}")

    async def find_all(self, css: str) -> list[WebElement]:
        found: list[WebElement] = await self.run(self.driver.find_elements, By.CSS_SELECTOR, css)
        return found

    def _first(self, css: str) -> WebElement | None:
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    async def text(self, css: str) -> str:
        """The element's text, read in one step (a live page may replace the element)."""
        value: str = await self.wait_for(lambda: self.driver.execute_script(
            "const e = document.querySelector(arguments[0]); return e && e.innerText", css),
            f"an element {css!r}")
        return value

    async def wait_for(self, probe: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
        """The first truthy value of `probe()` (run in a thread); fails saying `what` it waited
        for, with the page's text, after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = await self.run(probe)
            except (JavascriptException, WebDriverException):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                body = await self.run(lambda: self.driver.find_element(By.TAG_NAME, "body").text)
                raise AssertionError(f"waited {timeout:.0f} s for {what}; the page says:\n"
                                     f"{body[:1500]}")
            await asyncio.sleep(0.1)

    async def wait_js(self, condition: str, what: str, timeout: float = 30.0) -> Any:
        return await self.wait_for(lambda: self.driver.execute_script(f"return ({condition})"),
                                   what, timeout)

    async def resize(self, size: tuple[int, int], *, mobile: bool = False) -> None:
        """The viewport as a desktop window, or as a phone (so the viewport meta counts)."""
        metrics = {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": mobile}
        await self.run(self.driver.execute_cdp_cmd, "Emulation.setDeviceMetricsOverride", metrics)

    async def forget(self) -> None:
        """A new visitor: no cookies, desktop size."""
        await self.run(self.driver.execute_cdp_cmd, "Network.clearBrowserCookies", {})
        await self.resize(DESKTOP)

    async def axe(self) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations on the current page."""
        source = Path(os.environ[AXE_ENV]).read_text()
        await self.js(source)
        script = ("const done = arguments[arguments.length - 1];"
                  "axe.run(document, {resultTypes: ['violations']})"
                  ".then(r => done(r.violations)).catch(e => done([{id: 'axe-error', "
                  "impact: 'critical', help: String(e), nodes: []}]));")
        violations: list[dict[str, Any]] = await self.run(self.driver.execute_async_script,
                                                          script)
        return [v for v in violations if v.get("impact") in BLOCKING]

    async def screenshot(self, path: Path, size: tuple[int, int], *, mobile: bool) -> None:
        """The whole page at `size`'s width, as a PNG."""
        await self.resize(size, mobile=mobile)
        height = await self.js("return document.documentElement.scrollHeight")
        await self.resize((size[0], max(size[1], min(int(height), 6000))), mobile=mobile)
        await self.run(self.driver.save_screenshot, str(path))
        await self.resize(DESKTOP)


def describe(violations: list[dict[str, Any]]) -> str:
    return "\n".join(f"{v['id']} ({v['impact']}): {v['help']} — "
                     f"{[n.get('target') for n in v.get('nodes', [])][:3]}" for v in violations)


__all__ = ["DESKTOP", "PHONE", "Browser", "chromium", "describe", "start_chromium"]
