"""A reply that breaks its schema is re-asked at most twice (at most three paid attempts at a
step, a reply cut at its cap included), each re-ask telling the model what was wrong with its last
reply — the field, the rule (a range, a missing key, a type) and what it wrote — and the reason is
in the debate's trace. The real `openai` client against the suite's fake provider."""

from __future__ import annotations

import json
import os
import random
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from bot.settings import load_settings
from engine.domain import DebateRequest
from engine.errors import LLMInvalidOutput
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Meter, Prompt
from storage import audit
from storage.db import Database
from storage.records import Origin
from tests.fakes.chat_requests import Body
from tests.fakes.fixtures import TEST_API_KEY, gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.service_fixtures import running_worker, service, wait_done

pytestmark = pytest.mark.integration

TOPIC = "Should we move billing to PostgreSQL?"


class Argument(BaseModel):
    stance: Literal["pro", "con"]
    claim: str
    strength: int = Field(ge=1, le=10)


class Retries:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def __call__(self, attempt: int, reason: str, delay: float) -> None:
        self.reasons.append(reason)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def gateway(fake: FakeOpenAI) -> AsyncIterator[OpenAIGateway]:
    made = OpenAIGateway(gateway_settings(fake.base_url), rng=random.Random(7))
    yield made
    await made.aclose()


def spec(**kw: Any) -> CallSpec[Argument]:
    return CallSpec(model="gpt-4o-mini", schema=Argument, role="structured/opening/pro",
                    prompt=Prompt(system="You argue FOR the proposition.", user=TOPIC),
                    timeout=5.0, **kw)


def reasks(fake: FakeOpenAI) -> list[str]:
    """The user turns the gateway added after the first request's (its re-asks)."""
    last = fake.requests[-1].messages
    return [m["content"] for m in last[2:] if m["role"] == "user"]


async def test_a_number_out_of_range_is_reasked_twice_saying_the_range_and_the_value(
        gateway: OpenAIGateway, fake: FakeOpenAI) -> None:
    fake.script(TOPIC, {"stance": "pro", "claim": "it scales", "strength": 11})
    retries = Retries()
    with pytest.raises(LLMInvalidOutput, match="after 3 attempts"):
        await gateway.complete(spec(on_retry=retries))
    assert len(fake.requests) == 3                      # the first, and two re-asks
    first, second = reasks(fake)
    for said in (first, second):
        assert "strength" in said and "less than or equal to 10" in said and "11" in said
    assert len(retries.reasons) == 2
    assert all("strength" in r and "less than or equal to 10" in r for r in retries.reasons)


async def test_a_missing_key_and_a_bad_type_are_named_in_the_reask(
        gateway: OpenAIGateway, fake: FakeOpenAI) -> None:
    bad = iter([{"stance": "pro", "strength": "seven"}])
    fake.script(TOPIC, lambda body: next(bad, {"stance": "pro", "claim": "x", "strength": 7}))
    reply = await gateway.complete(spec())
    assert reply.value.strength == 7 and reply.attempts == 2
    (said,) = reasks(fake)
    assert "claim: Field required" in said
    assert "strength: Input should be a valid integer" in said and "'seven'" in said


async def test_a_reply_cut_at_its_cap_counts_toward_the_three_paid_attempts(
        gateway: OpenAIGateway, fake: FakeOpenAI) -> None:
    replies = iter(["x " * 4000])      # the first runs past its cap and is cut off

    def reply(body: Body) -> str | Body:
        return next(replies, {"stance": "pro", "claim": "x", "strength": 0})

    fake.script(TOPIC, reply)
    meter = Meter()
    with pytest.raises(LLMInvalidOutput, match="after 3 attempts"):
        await gateway.complete(spec(max_output_tokens=64, meter=meter))
    assert meter.calls == len(fake.requests) == 3
    assert reasks(fake) and "greater than or equal to 1" in reasks(fake)[-1]


async def test_the_debate_trace_says_why_a_step_was_asked_again(tmp_path: Any) -> None:
    async with FakeOpenAI(replies="typical", seed=5) as fake:
        verdict = {"winner": "A", "rationale": "A argued better.", "confidence": 7}
        fake.script(lambda b: "confidence" in json.dumps(b.get("response_format") or {}),
                    verdict)
        settings = load_settings({"OPENAI_API_KEY": TEST_API_KEY,
                                  "OPENAI_BASE_URL": fake.base_url,
                                  "DIALECTIC_CACHE_TTL_SECONDS": "0",
                                  "DIALECTIC_CONFIG": os.devnull})
        db = Database(f"sqlite+aiosqlite:///{tmp_path}/reask.db")
        await db.upgrade()
        svc = service(db, settings)
        sub = await svc.submit(DebateRequest(topic=TOPIC, mode="simple"),
                               origin=Origin(surface="api"))
        async with running_worker(svc):
            record = await wait_done(svc, sub.record.id, timeout=60)
        async with db.transaction(readonly=True) as session:
            events = await audit.events(session, record.id)
        await svc.aclose()
        await db.dispose()
    verdicts = [r for r in fake.requests if r.step == "simple/verdict"]
    assert len(verdicts) == 3
    retried = [e.data for e in events if e.kind == "step_retry"]
    assert [d["key"] for d in retried] == ["simple/verdict"] * 2
    assert all("confidence" in d["reason"] and "7" in d["reason"] for d in retried)
    assert record.result is not None
    assert any("simple/verdict" in m and "confidence" in m for m in record.result.missing)
