"""docs/tracing.md's picture as Chromium draws it (tests/waterfall_page.py): the spans of a real
consensus debate (the real gateway against the fake provider, one call retried and one judge
refused) are one row each, children under their parent in start order, bars placed on the
trace's time axis, the failed spans red, nothing wider than the window at 1280 px or at 390 px;
a span's name and attributes are text, never markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from selenium import webdriver

from tests.support.browser_fixtures import DESKTOP, PHONE, chromium
from tests.waterfall import shown_faults, trace
from tests.waterfall_page import page

__all__ = ["chromium"]  # fixture

ROWS = """return [...document.querySelectorAll('.row[role=listitem]')].map(r => {
  const bar = r.querySelector('.bar').getBoundingClientRect();
  const track = r.querySelector('.track').getBoundingClientRect();
  return {id: r.dataset.spanId, parent: r.dataset.parentId, depth: +r.dataset.depth,
          name: r.querySelector('.name').textContent, left: bar.left, right: bar.right,
          trackLeft: track.left, trackRight: track.right,
          colour: getComputedStyle(r.querySelector('.bar')).backgroundColor};
});"""
OVERFLOW = "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


def show(driver: webdriver.Chrome, html: str, where: Path, size: tuple[int, int],
         *, mobile: bool = False) -> None:
    metrics = {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    where.write_text(html)
    driver.get(where.resolve().as_uri())


def red(colour: str) -> bool:
    r, g, b = (int(x) for x in colour.removeprefix("rgb(").rstrip(")").split(",")[:3])
    return r > 150 and g < 80 and b < 80


@pytest.fixture
async def debate_spans() -> list[ReadableSpan]:
    return await trace("consensus", latency=0.05, faults=shown_faults)


def check_tree(rows: list[dict[str, Any]], spans: list[ReadableSpan]) -> None:
    """Every span once; each row after its parent, one level deeper, siblings in start order."""
    by_id = {f"{s.context.span_id:016x}": s for s in spans}
    assert sorted(r["id"] for r in rows) == sorted(by_id)
    seen: dict[str, dict[str, Any]] = {}
    last_child: dict[str, int] = {}
    for index, row in enumerate(rows):
        assert row["name"] == by_id[row["id"]].name
        if row["parent"] in by_id:
            parent = seen[row["parent"]]            # KeyError: a child before its parent
            assert row["depth"] == parent["depth"] + 1, row
            # a child sits inside its parent's subtree: nothing shallower since the parent
            between = rows[rows.index(parent) + 1:index]
            assert all(r["depth"] > parent["depth"] for r in between), row
            start = by_id[row["id"]].start_time or 0
            assert start >= last_child.get(row["parent"], 0), row
            last_child[row["parent"]] = start
            assert row["left"] >= parent["left"] - 1, (row, parent)   # starts after its parent
        else:
            assert row["depth"] == 0
        assert row["trackLeft"] - 1 <= row["left"] <= row["right"] <= row["trackRight"] + 1, row
        seen[row["id"]] = row


async def test_one_row_per_span_in_parent_order_errors_red_no_overflow(
        chromium: webdriver.Chrome, debate_spans: list[ReadableSpan], tmp_path: Path) -> None:
    html = page(debate_spans, title="trace", source="the fake provider")
    show(chromium, html, tmp_path / "trace.html", DESKTOP)
    rows = chromium.execute_script(ROWS)
    assert len(rows) == len(debate_spans) >= 25        # workflow, 4 phases, 10 agents, 10 chats
    check_tree(rows, debate_spans)
    assert rows[0]["name"] == "invoke_workflow dialectic"
    failed = {f"{s.context.span_id:016x}" for s in debate_spans
              if s.status.status_code is StatusCode.ERROR}
    assert [r["name"] for r in rows if r["id"] in failed] == ["invoke_agent judge/risk",
                                                              "chat gpt-5-mini"]
    assert {r["id"] for r in rows if red(r["colour"])} == failed
    scroll, client = chromium.execute_script(OVERFLOW)
    assert scroll <= client == DESKTOP[0]
    text = chromium.find_element("tag name", "body").text
    assert "partial result" in text and "1 retry" in text and "LLMBadRequest" in text
    show(chromium, html, tmp_path / "trace.html", PHONE, mobile=True)
    scroll, client = chromium.execute_script(OVERFLOW)
    assert scroll <= client == PHONE[0]
    check_tree(chromium.execute_script(ROWS), debate_spans)


def hostile_spans() -> list[ReadableSpan]:
    """A trace whose names and attributes are markup (a model or a user can name things)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_workflow <script>window.owned=1</script>"), \
            tracer.start_as_current_span('chat <img src=x onerror="window.owned=2">') as chat:
        chat.set_attributes({"gen_ai.response.model": "<mark>bold</mark>",
                             "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4,
                             "error.type": "<s>Oops</s>"})
        chat.set_status(Status(StatusCode.ERROR, "<u>no</u>"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def test_names_and_attributes_are_text(chromium: webdriver.Chrome, tmp_path: Path) -> None:
    html = page(hostile_spans(), title="<h2>title</h2>", source="<em>fake</em>")
    show(chromium, html, tmp_path / "hostile.html", DESKTOP)
    assert chromium.execute_script("return window.owned") is None
    assert chromium.execute_script(
        "return document.querySelectorAll('script, img, mark, s, u, em, h2').length") == 0
    text = chromium.find_element("tag name", "body").text
    for shown in ("invoke_workflow <script>window.owned=1</script>", "<mark>bold</mark>",
                  "✕ <s>Oops</s>", "<em>fake</em>", '<img src=x onerror="window.owned=2">'):
        assert shown in text
    assert [r["depth"] for r in chromium.execute_script(ROWS)] == [0, 1]
