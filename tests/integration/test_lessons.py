"""What a call learns, it keeps (engine/provider/lessons.py): parallel calls that hit the same 400
take its lesson once and each send again once; the lesson is stored (storage/lessons.py) so the
next process starts knowing it; doctor shows it and forgets it."""

from __future__ import annotations

import asyncio
import logging

import pytest

from engine.provider.gateway import OpenAIGateway
from engine.provider.lessons import Learned
from engine.provider.llm import CallSpec, Prompt
from engine.schemas.procon import Position
from storage.db import Database
from storage.lessons import DbLessonBook
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should we move billing to PostgreSQL?"
TEMPERATURE_400 = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0.7 with this model. Only the "
               "default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}


def position(model: str, n: int = 0) -> CallSpec[Position]:
    return CallSpec(model=model, schema=Position, role="pro", step=f"consensus/opening/{n}",
                    prompt=Prompt(system="You argue FOR the proposition.",
                                  user=f"{TOPIC} ({n})"),
                    temperature=0.7, max_output_tokens=8192)


async def test_parallel_calls_hitting_the_same_400s_all_complete(
        caplog: pytest.LogCaptureFixture) -> None:
    """An Azure reasoning deployment: temperature, then `max_tokens`, refused by each of six
    calls in flight together; each lesson is taken once and every call sends again."""
    async with FakeOpenAI(latency=0.05, provider="azure", replies="short",
                          deployments={"reasoning-prod": "o4-mini"}) as fake:
        gateway = OpenAIGateway(gateway_settings(fake.base_url))
        try:
            with caplog.at_level(logging.WARNING, logger="engine.provider.lessons"):
                replies = await asyncio.gather(*(gateway.complete(position("reasoning-prod", n))
                                                 for n in range(6)))
        finally:
            await gateway.aclose()
    assert len(replies) == 6 and all(r.model.startswith("o4-mini") for r in replies)
    learned = [r.getMessage() for r in caplog.records if r.name == "engine.provider.lessons"]
    assert len(learned) == 2, learned   # temperature left out; the cap renamed
    assert not any("both output-cap" in said for said in learned)
    last = fake.requests[-1].body
    assert "temperature" not in last and "max_completion_tokens" in last
    assert "max_tokens" not in last


async def test_a_lesson_is_kept_for_the_next_process(db: Database) -> None:
    book = DbLessonBook(db)
    async with FakeOpenAI() as fake:
        refuses = lambda body: "temperature" in body   # noqa: E731
        fake.fail(refuses, 400, body=TEMPERATURE_400, times=None)
        first = OpenAIGateway(gateway_settings(fake.base_url), lessons=book)
        try:
            await first.complete(position("house-model"))
        finally:
            await first.aclose()
        assert fake.count() == 2
        second = OpenAIGateway(gateway_settings(fake.base_url), lessons=DbLessonBook(db))
        try:
            await second.complete(position("house-model"))
            (lesson,) = second.learned.lessons().values()
        finally:
            await second.aclose()
    assert fake.count() == 3 and "temperature" not in fake.requests[-1].body
    assert lesson.describe() == ["temperature dropped"]
    endpoint = first.endpoint
    assert await book.forget(endpoint) == 1
    assert await Learned(book).forget(endpoint) == 0
    assert await book.load(endpoint) == {}
