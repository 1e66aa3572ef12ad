"""A debate whose estimate recent history learned down (the provider's replies run shorter than
the prior guesses) is held less up front, but is not stopped as "budget exhausted" half way while
the day has room: at run time its hold may grow up to its ceiling. Found by `make soak`: after a
restart, a fresh process calibrated its estimates and 14 of 36 debates ended incomplete with most
of their reservation unspent."""

from __future__ import annotations

from bot.settings import Settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done

API = Origin(surface="api")
CHAT_MODEL = "gpt-4o-mini"


async def test_a_calibrated_down_estimate_does_not_stop_the_debate(db: Database) -> None:
    """A chat model whose replies run shorter than the prior (a reasoning model's hidden tokens
    would not)."""
    async with FakeOpenAI(replies="minimal") as fake:
        chat = gateway_settings(fake.base_url, default_model=CHAT_MODEL)
        settings = Settings(**chat.model_dump(),
                            database_url="sqlite://", daily_budget_usd=10.0, cache_ttl_seconds=0)
        first = service(db, settings)
        async with running_worker(first):
            for i in range(3):  # history: what debates of this mode really use
                sub = await first.submit(DebateRequest(topic=f"Adopt Rust #{i}?", mode="simple"),
                                         origin=API)
                await wait_done(first, sub.record.id)
        await first.aclose()
        fresh = service(db, settings)  # a process started after them: it calibrates at once
        learned = (await fresh.history.sizes()).size(CHAT_MODEL, "side:opening")
        assert learned.samples and learned.high.completion < 500, "the fake's replies are short"
        sub = await fresh.submit(DebateRequest(topic="Adopt Rust now?", mode="simple"),
                                 origin=API)
        async with running_worker(fresh):
            done = await wait_done(fresh, sub.record.id)
        await fresh.aclose()
    assert done.status is DebateStatus.COMPLETED
    assert done.result is not None and done.result.complete, done.result.missing
    assert sub.estimate.usd_high < service(db, settings).engine.price_for(CHAT_MODEL).output
    assert done.cost_usd <= sub.estimate.ceiling_usd
