"""Evaluations over HTTP: `/api/evaluations` lists runs and serves a report in the shape
`dialectic eval --json` prints; the console's Evaluations pages show the figures, escape what a
dataset or a model wrote, and say a rehearsal and a partial run for what they are."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from bot.service.evaluations import EvalSpec, Evaluations
from bot.settings import Settings
from engine.evaluation.builtin import decisions
from engine.evaluation.dataset import Dataset, Item
from storage.db import Database
from tests.fakes.knowing import Knowing
from tests.fakes.openai_server import FakeOpenAI
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

HOSTILE = "<script>alert('x')</script>"
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
ITEMS = tuple(Item(id=f"q{i}", question=f"What is {i} times 7?", answer=str(i * 7))
              for i in range(1, 7))
DATASET = Dataset(name=HOSTILE, items=ITEMS, source="tests: times seven")


def _settings(base_url: str, **more: float) -> Settings:
    return Settings(openai_api_key="test-key", openai_base_url=base_url, poll_interval=0.05,
                    lease_seconds=5.0, daily_budget_usd=10.0, backoff_base=0.01,
                    backoff_cap=0.05, **more)


async def _evaluate(evals: Evaluations, modes: tuple[str, ...]) -> str:
    spec = evals.check(EvalSpec(dataset=DATASET, modes=modes, samples=3, concurrency=4))
    run = await evals.start(spec, await evals.preflight(spec))
    return (await evals.execute(run, spec)).run.id


async def _page(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as resp:
        return resp.status, await resp.text()


async def test_the_api_and_the_pages_show_a_run_as_the_command_line_does(db: Database) -> None:
    async with FakeOpenAI() as fake:
        Knowing({i.question: i.answer for i in ITEMS}, p=1.0).install(fake)
        async with served(db, _settings(fake.base_url), workers=0) as (base, rt, _), \
                aiohttp.ClientSession() as session:
            run_id = await _evaluate(Evaluations(rt.service), ("single", "vote"))
            status, listed = await call(session, "GET", f"{base}/api/evaluations")
            status_one, report = await call(session, "GET", f"{base}/api/evaluations/{run_id}")
            missing, said = await call(session, "GET", f"{base}/api/evaluations/nope")
            page_status, page = await _page(session, f"{base}/evaluations")
            run_status, run_page = await _page(session, f"{base}/evaluations/{run_id}")
            gone, _ = await _page(session, f"{base}/evaluations/nope")
    assert status == status_one == 200
    (summary,) = listed["evaluations"]
    assert summary["id"] == run_id and summary["done"] == {"single": 6, "vote": 6}
    assert summary["status"] == "finished" and summary["rehearsal"] is False
    shown: dict[str, Any] = next(m for m in report["modes"] if m["mode"] == "vote")
    assert shown["accuracy"] == 1.0 and shown["n"] == 6 and shown["calls"] == 3.0
    assert {c["against"] for c in report["comparisons"]} == {"single"}
    assert missing == 404 and "nope" in said["error"]
    assert page_status == run_status == 200 and gone == 404
    for html in (page, run_page):
        assert HOSTILE not in html and ESCAPED in html
    assert f'href="/evaluations/{run_id}"' in page and 'aria-current="page"' in page
    assert "100.0%" in run_page and "vote vs single" not in run_page
    assert "against <b>single</b>" in run_page and "Rehearsal" not in run_page


@pytest.mark.parametrize("modes", [("single",)])
async def test_a_rehearsal_run_is_labelled_on_its_page(db: Database,
                                                       modes: tuple[str, ...]) -> None:
    async with served(db, rehearsal_settings(), workers=0) as (base, rt, _), \
            aiohttp.ClientSession() as session:
        run_id = await _evaluate(Evaluations(rt.service), modes)
        _, listing = await _page(session, f"{base}/evaluations")
        _, page = await _page(session, f"{base}/evaluations/{run_id}")
        _, report = await call(session, "GET", f"{base}/api/evaluations/{run_id}")
    assert ">rehearsal</span>" in listing
    assert "accuracy is meaningless" in page and "(rehearsal)" in page
    assert report["rehearsal"] is True and "meaningless" in report["note"]


async def test_an_evaluations_debates_are_labelled_on_every_page_and_kept_out_of_oversight(
        db: Database) -> None:
    """Every published result spot-checked: the old code queued a review for each evaluation
    debate, counted them in `/api/judges` and showed them unlabelled."""
    found = replace(decisions(), items=decisions().items[:2])
    async with FakeOpenAI() as fake:
        Knowing({i.question: i.answer for i in found.items}, p=1.0).install(fake)
        settings = _settings(fake.base_url, spot_check_fraction=1.0)
        async with served(db, settings, workers=0) as (base, rt, _), \
                aiohttp.ClientSession() as session:
            evals = Evaluations(rt.service)
            spec = evals.check(EvalSpec(dataset=found, modes=("consensus",), concurrency=2))
            run = await evals.start(spec, await evals.preflight(spec))
            await evals.execute(run, spec)
            _, listed = await call(session, "GET", f"{base}/api/debates")
            debate = listed["debates"][0]["id"]
            _, record = await call(session, "GET", f"{base}/api/debates/{debate}")
            _, reviews = await call(session, "GET", f"{base}/api/reviews")
            _, judges = await call(session, "GET", f"{base}/api/judges")
            _, index = await _page(session, f"{base}/")
            _, page = await _page(session, f"{base}/debates/{debate}")
    assert reviews["reviews"] == [] and judges["debates"] == 0
    mark = f"evaluation {run.id}"
    assert [(d["evaluation"], mark in d["marks"]) for d in listed["debates"]] == [
        (run.id, True)] * 2
    assert record["origin"]["surface"] == "eval" and record["origin"]["evaluation_id"] == run.id
    link = f'<a class="badge info" href="/evaluations/{run.id}">{mark}</a>'
    assert index.count(link) == 2 and link in page
    assert "Sent to a reviewer before it counts." not in page or "no reviewer was asked" in page
