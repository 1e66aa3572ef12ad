"""The cache never crosses a boundary: a finished debate answers a new request only when the
same question goes to the same machinery (endpoint, models and their effort, preset, prompts,
rehearsal or real). Configured as users do: settings from the environment."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bot.settings import Settings, load_settings
from engine.domain import DebateRequest
from storage.db import Database
from storage.records import Origin
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done
from tests.support.storage_fixtures import db

__all__ = ["db"]  # fixture

API = Origin(surface="api")
TOPIC = "Should we move billing to PostgreSQL?"


def settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "DIALECTIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DIALECTIC_CONFIG", os.devnull)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return load_settings(os.environ)


async def finished(db: Database, settings: Settings, **request: Any) -> str:
    svc = service(db, settings)
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple", **request), origin=API)
    async with running_worker(svc):
        await wait_done(svc, sub.record.id)
    await svc.aclose()
    return sub.record.id


async def asked_again(db: Database, settings: Settings, **request: Any) -> tuple[bool, str]:
    svc = service(db, settings)
    sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple", **request), origin=API)
    await svc.aclose()
    return sub.cached, sub.record.id


async def test_a_rehearsal_is_never_served_to_a_real_request(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rehearsal = settings(monkeypatch)
    first = await finished(db, rehearsal)
    assert await asked_again(db, rehearsal) == (True, first)   # the same machinery: cached
    async with FakeOpenAI() as fake:
        real = settings(monkeypatch, OPENAI_API_KEY="k", OPENAI_BASE_URL=fake.base_url)
        cached, debate_id = await asked_again(db, real)
    assert not cached and debate_id != first


@pytest.mark.parametrize("change", [
    {"DIALECTIC_DEFAULT_MODEL": "gpt-4.1-mini"},       # another model
    {"DIALECTIC_REASONING_EFFORT": "high"},            # the same model, thinking harder
    {"OPENAI_BASE_URL": "OTHER"},                      # another endpoint
])
async def test_another_models_answer_is_never_served_as_this_one(
        db: Database, monkeypatch: pytest.MonkeyPatch, change: dict[str, str]) -> None:
    async with FakeOpenAI() as fake, FakeOpenAI() as other:
        base = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url}
        first = await finished(db, settings(monkeypatch, **base))
        assert await asked_again(db, settings(monkeypatch, **base)) == (True, first)
        changed = {k: (other.base_url if v == "OTHER" else v) for k, v in change.items()}
        cached, debate_id = await asked_again(db, settings(monkeypatch, **{**base, **changed}))
    assert not cached and debate_id != first


async def test_options_that_change_the_debate_change_the_key(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rehearsal = settings(monkeypatch)
    first = await finished(db, rehearsal)
    cached, _ = await asked_again(db, rehearsal, options={"policy": "No customer data leaves "
                                                                     "the EU."})
    assert not cached
    assert await asked_again(db, rehearsal) == (True, first)
