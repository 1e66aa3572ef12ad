"""Every mode and preset finishes on the models teams really use: through the service (SQLite and
PostgreSQL, a worker, the daily budget at its default $10), against the suite's provider that
answers as real ones do (tests/fakes: typical and verbose reply lengths, a chat model and a
reasoning model with its parameter rules and hidden tokens, prompt caching).

What a team needs of each debate: it completes with nothing missing, no reply is re-asked for its
length or cut off, no request is refused with a 400, and the day's recorded spend is the
provider's bill."""

from __future__ import annotations

import asyncio

import pytest
from markupsafe import escape as html_escape
from rich.console import Console

from bot.cli.progress import print_summary
from bot.http.console import transcript_page
from bot.service.timeline import timeline_of
from bot.settings import Settings
from bot.slack.mrkdwn import escape
from bot.slack.views.debate import divergence_summary
from engine.domain import DebateRequest, DebateResult
from engine.settings import EngineSettings
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import EVERY_MODE_AND_PRESET, running_worker, service, wait_done
from tests.support.slack_view_fixtures import TRANSCRIPT, text_of

pytestmark = pytest.mark.integration

API = Origin(surface="api")
TOPIC = "Should we move billing to PostgreSQL?"
REQUESTS = EVERY_MODE_AND_PRESET
FINISHED = (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)


def settings_for(base_url: str, model: str | None) -> Settings:
    """The defaults a team starts with (the default model unless named, $10 a day), pointed at
    the simulated provider; no caches, so every debate calls it."""
    engine = gateway_settings(base_url, call_timeout=30.0).model_dump()
    if model is not None:
        engine["default_model"] = model
    return Settings(**engine, cache_ttl_seconds=0, judge_cache_ttl_seconds=0)


async def run_all(db: Database, settings: Settings) -> tuple[list[DebateRecord], float]:
    """The eleven requests submitted together, one worker running them side by side; the
    records and the day's recorded spend."""
    svc = service(db, settings)
    subs = [await svc.submit(DebateRequest(topic=f"{TOPIC} ({i})", **fields), origin=API)
            for i, fields in enumerate(REQUESTS)]
    async with running_worker(svc, concurrency=len(subs)):
        done = await asyncio.gather(*(wait_done(svc, s.record.id, timeout=120) for s in subs))
    spent = (await svc.budget_today())["spent_usd"]
    await svc.aclose()
    assert isinstance(spent, float)
    for record, sub in zip(done, subs, strict=True):
        assert record.cost_usd <= sub.estimate.ceiling_usd + 1e-9
    return list(done), spent


@pytest.mark.parametrize("replies", ["typical", "verbose"])
@pytest.mark.parametrize("model", [None, "gpt-4o-mini"], ids=["default-model", "gpt-4o-mini"])
async def test_every_mode_and_preset_completes(db: Database, replies: str,
                                               model: str | None) -> None:
    async with FakeOpenAI(replies=replies, seed=20) as fake:
        settings = settings_for(fake.base_url, model)
        assert settings.service.daily_budget_usd == 10.0
        records, spent = await run_all(db, settings)
    for record, fields in zip(records, REQUESTS, strict=True):
        result = record.result
        assert result is not None, fields
        assert record.status in FINISHED, (fields, record.status, result.error)
        assert result.complete, (fields, result.missing)
        assert not result.degraded and not result.refused and not result.rehearsal
        headline_follows_the_panel(result)
    # every request answered first time: no 400, no cut-off, no re-ask
    assert {r.outcome for r in fake.requests} == {"reply"}
    assert all(len(r.messages) == 2 for r in fake.requests), "a reply was re-asked"
    assert sum(r.result.cost.calls for r in records) == len(fake.requests)
    # the recorded spend is the provider's bill (cached prompt tokens at their discount)
    rate = settings.engine.price_for(settings.engine.default_model)
    bill = fake.bill_usd(input=rate.input, output=rate.output, cached_input=rate.cached_input)
    assert spent == pytest.approx(bill, rel=0.01)
    billed = fake.billed()
    assert sum(r.result.cost.cached_tokens for r in records) == billed["cached_tokens"]
    assert sum(r.result.cost.reasoning_tokens for r in records) == billed["reasoning_tokens"]
    if model is None:  # the default is a reasoning model: its hidden tokens were billed
        assert billed["reasoning_tokens"] > 0
        assert all("temperature" not in r.body for r in fake.requests)
    assert billed["cached_tokens"] > 0


async def test_a_refusal_is_named_and_the_judges_go_on(db: Database) -> None:
    words = "I'm sorry, but I can't help with arguing that position."
    async with FakeOpenAI(replies="typical", seed=21) as fake:
        # the con side's every turn: its system prompt names its persona
        fake.refuse(lambda body: "arguing AGAINST the proposition in a structured debate"
                    in str(body["messages"][0].get("content", "")), text=words, times=None)
        svc = service(db, settings_for(fake.base_url, None))
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="consensus"), origin=API)
        async with running_worker(svc):
            record = await wait_done(svc, sub.record.id, timeout=120)
        await svc.aclose()
    result = record.result
    assert result is not None
    refused = [r for r in result.refused if r["refusal"] == words]
    assert refused, result.refused
    assert {r["role"] for r in refused} == {"con"}
    assert any(words in m and "refused by the model" in m for m in result.missing)
    assert not result.complete
    assert result.consensus is not None and result.consensus.judges  # the panel still judged
    asked_again = [r for r in fake.requests if r.outcome == "refused"]
    assert len(asked_again) == len(refused), "a refusal is never asked again"
    shown_everywhere(record, words)


def headline_follows_the_panel(result: DebateResult) -> None:
    """A panel's headline never contradicts its votes or its agreement figures."""
    panel = result.consensus
    if panel is None or len(panel.winners) < 2:
        return
    contested = panel.irreconcilable or panel.band == "contentious"
    unanimous = len(set(panel.winners.values())) == 1
    if contested and unanimous:   # agreed on the outcome, not on the scores; "split" never said
        assert result.verdict.startswith("The judges agree ") and result.winner is None
        assert "split" not in result.verdict, result.verdict
    elif contested:
        assert result.verdict.startswith("Contested:") and result.winner is None, result.verdict
    elif result.winner in ("pro", "con"):
        backing = sum(1 for side in panel.winners.values() if side == result.winner)
        assert backing * 2 > len(panel.winners) or panel.weights, result.verdict


def shown_everywhere(record: DebateRecord, words: str) -> None:
    """Slack's result message, the console's transcript page and the terminal's summary each
    say that the model refused, in its words (escaped for each)."""
    assert record.result is not None
    slack = text_of(divergence_summary(record.result, transcript_url=TRANSCRIPT))
    assert "refused by the model" in slack and escape(words) in slack
    page = transcript_page(EngineSettings(), record, timeline=timeline_of(
        EngineSettings(), record, []))
    assert "Refused by the model" in page and str(html_escape(words)) in page
    console = Console(record=True, width=200)
    print_summary(console, record.result)
    terminal = console.export_text()
    assert "refused by the model" in terminal and words in terminal
