"""Replay does what it says in every mode, through the service against the suite's provider
(tests/fakes): more rounds continue the stored transcript (the earlier steps are read, not paid
again), everything after the new rounds runs again and is judged on the longer transcript, the
estimate counts exactly the calls the provider then receives, and the day's budget holds them.
A mode with no rounds to add is refused in one line, and nothing is stored or reserved."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from bot.service.debates import DebateService
from bot.settings import load_settings
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.protocols import get_protocol
from engine.vocabulary import Mode
from storage.db import Database
from storage.records import DebateRecord, DebateStatus, Origin
from tests.fakes.chat_requests import Body, last_text, message_text
from tests.fakes.fixtures import TEST_API_KEY
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest
from tests.support.service_fixtures import running_worker, service, wait_done

pytestmark = pytest.mark.integration

API = Origin(surface="api")
TOPIC = "Should we move billing to PostgreSQL?"
FINISHED = (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)


def env_for(base_url: str) -> dict[str, str]:
    """What a team sets to run on a provider: its key and endpoint; caches off, so every debate
    asks the provider, and no settings file."""
    return {"OPENAI_API_KEY": TEST_API_KEY, "OPENAI_BASE_URL": base_url,
            "DIALECTIC_CACHE_TTL_SECONDS": "0", "DIALECTIC_JUDGE_CACHE_TTL_SECONDS": "0",
            "DIALECTIC_BACKOFF_BASE": "0.01", "DIALECTIC_BACKOFF_CAP": "0.05",
            "DIALECTIC_CONFIG": os.devnull}


def is_critic(body: Body) -> bool:
    return "a rigorous critic" in message_text((body.get("messages") or [{}])[0])


def unsatisfied(fake: FakeOpenAI) -> Any:
    """The critic's review as the fake writes it, never satisfied: the exchange runs to its
    round limit (a satisfied critic would end it early, and a replay could not continue it)."""
    def reply(body: Body) -> Body:
        review = dict(fake.generated(body, obedient=False))
        review["satisfied"] = False
        return review
    return reply


@pytest.fixture
async def provider() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(replies="typical", seed=5) as fake:
        fake.script(is_critic, unsatisfied(fake))
        yield fake


@dataclass(frozen=True)
class Extension:
    """What one more round is in a mode: the step keys it adds and runs again, the phase the
    result then shows, and the text by which the final steps show they read the new round."""

    new_steps: frozenset[str]
    phase: str
    judged_mark: str


PANELISTS = ("pragmatic-engineer", "sceptical-economist", "risk-officer")
JUDGES = tuple(f"judge/{n}" for n in ("technical", "business", "risk", "general"))
EXTENSIONS: dict[Mode, Extension] = {
    Mode.SIMPLE: Extension(frozenset({"simple/rebuttal/2/pro", "simple/rebuttal/2/con",
                                      "simple/verdict"}), "rebuttal 2", "— rebuttal 2"),
    Mode.STRUCTURED: Extension(frozenset({
        "structured/cross/2/pro", "structured/cross/2/con", "structured/closing/pro",
        "structured/closing/con", "structured/judge"}),
        "cross-examination 2", "— cross-examination 2"),
    Mode.CONSENSUS: Extension(frozenset({
        "structured/cross/2/pro", "structured/cross/2/con", "structured/closing/pro",
        "structured/closing/con", *JUDGES}), "cross-examination 2", "— cross-examination 2"),
    Mode.PANEL: Extension(frozenset({*(f"panel/answer/2/{p}" for p in PANELISTS),
                                     "panel/synthesis"}), "reflection 2", "round 2: "),
    Mode.CRITIQUE: Extension(frozenset({"critique/critique/2", "critique/proposal/2",
                                        "critique/final"}), "critique 2", "## Critique 2"),
}


async def finished(svc: DebateService, debate_id: str) -> DebateRecord:
    async with running_worker(svc):
        record = await wait_done(svc, debate_id, timeout=120)
    assert record.status in FINISHED, (record.status, record.result and record.result.error)
    return record


def calls_since(fake: FakeOpenAI, start: int) -> list[RecordedRequest]:
    return fake.requests[start:]


@pytest.mark.parametrize("mode", list(EXTENSIONS), ids=str)
async def test_one_more_round_continues_the_debate_and_is_judged_again(
        db: Database, provider: FakeOpenAI, mode: Mode) -> None:
    settings = load_settings(env_for(provider.base_url))
    svc = service(db, settings)
    source = await finished(svc, (await svc.submit(DebateRequest(topic=TOPIC, mode=mode),
                                                   origin=API)).record.id)
    before = len(provider.requests)
    want = EXTENSIONS[mode]

    sub = await svc.replay(source.id, more_rounds=1, actor="api")
    estimate = sub.estimate
    # the estimate is the calls to be made: the total and the per-role counts agree
    assert estimate.calls == sum(estimate.calls_per_role.values()) == len(want.new_steps)
    # and the day's budget holds them before anything runs
    assert sub.record.reserved_usd == pytest.approx(estimate.usd_high) and estimate.usd_high > 0
    assert (await svc.budget_today())["reserved_usd"] == pytest.approx(estimate.usd_high)
    replay = await finished(svc, sub.record.id)
    await svc.aclose()

    made = calls_since(provider, before)
    assert {r.outcome for r in made} == {"reply"}
    assert len(made) == estimate.calls
    assert {r.step for r in made} == want.new_steps
    assert Counter(r.role.split("/", 1)[0] for r in made) == estimate.calls_per_role
    # the earlier steps were read from the source, not paid for again
    assert set(replay.reused_steps).isdisjoint(want.new_steps) and replay.reused_steps
    result, original = replay.result, source.result
    assert result is not None and original is not None
    assert result.cost.calls == len(made) and result.cost.reused_calls == len(
        replay.reused_steps)
    # every mode's default is one round; the replay runs two
    assert replay.parent_id == source.id
    assert (source.request.rounds, replay.request.rounds) == (1, 2)
    # the transcript has the new round; the source's does not
    assert want.phase in [p.name for p in result.phases]
    assert want.phase not in [p.name for p in original.phases]
    assert result.complete, result.missing
    # the final steps read the extended transcript
    final = get_protocol(mode).final_steps
    judged = [r for r in made if r.step in final]
    assert judged and all(want.judged_mark in last_text(r.body, "user") for r in judged)
    untouched = await svc.get(source.id)
    assert untouched.result == original and untouched.status == source.status


async def test_a_redteam_replay_with_more_rounds_is_refused_and_changes_nothing(
        db: Database, provider: FakeOpenAI) -> None:
    svc = service(db, load_settings(env_for(provider.base_url)))
    source = await finished(svc, (await svc.submit(DebateRequest(topic=TOPIC, mode="redteam"),
                                                   origin=API)).record.id)
    made, listed = len(provider.requests), await svc.recent()
    budget = await svc.budget_today()
    with pytest.raises(InvalidRequest) as refused:
        await svc.replay(source.id, more_rounds=1, actor="api")
    message = str(refused.value)
    assert "\n" not in message and "no rounds to add" in message and "--synthesizer" in message
    assert await svc.recent() == listed
    assert await svc.budget_today() == budget
    assert len(provider.requests) == made
    # what a redteam replay can change, it does: the synthesis again, with another model
    sub = await svc.replay(source.id, synthesizer="gpt-4o", actor="api")
    replay = await finished(svc, sub.record.id)
    await svc.aclose()
    new = calls_since(provider, made)
    assert [r.step for r in new] == ["redteam/synthesis"] and sub.estimate.calls == 1
    assert sub.estimate.calls_per_role == {"synthesizer": 1}
    assert new[0].body["model"] == "gpt-4o" and replay.result is not None
