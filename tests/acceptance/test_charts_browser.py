"""The band scale as Chromium draws it: alpha's label stays inside the picture wherever alpha
is (at 0 it was centred on the left edge and read ": 0.00"), on the console's own stylesheet."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from selenium import webdriver

from bot.http.charts import SCALE_W, alpha_scale_svg
from engine.settings import ThresholdSpec
from tests.support.browser_fixtures import chromium

__all__ = ["chromium"]  # fixture

CSS = (Path(__file__).parents[2] / "bot" / "http" / "static" / "console.css").read_text()
BOX = """const t = document.querySelector('svg.scale .sc-value'); const b = t.getBBox();
return [b.x, b.x + b.width, t.textContent];"""


@pytest.mark.parametrize("alpha", [-0.4, 0.0, 0.004, 0.05, 0.5, 0.95, 0.999, 1.0])
def test_the_alpha_label_is_whole_inside_the_scale(chromium: webdriver.Chrome,
                                                   alpha: float) -> None:
    svg = alpha_scale_svg(alpha, (max(alpha - 0.2, -1.0), min(alpha + 0.2, 1.0)),
                          ThresholdSpec(high=0.8, tentative=0.67, escalate=0.5))
    page = f"<!doctype html><style>{CSS}</style><main>{svg}</main>"
    chromium.get("data:text/html;charset=utf-8," + quote(page))
    left, right, text = chromium.execute_script(BOX)
    assert text.startswith("α ") and text.endswith(f"{alpha:.2f}")
    assert 0 <= left and right <= SCALE_W, (left, right, text)
