"""No reply is refused for its length: every reply schema takes 5,000-character texts and 12-item
lists, keeps its numeric ranges (said in words in the field's description, since a portable schema
drops the keywords), and derives a JSON schema with no length keyword; a debate whose sides make
nine 5,000-character claims and whose judges assess 30 claims completes without a re-ask; the
rehearsal model still writes short replies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import annotated_types
import openai
import pytest
from pydantic import BaseModel, ValidationError

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Prompt
from engine.provider.rehearsal import RehearsalModel
from engine.schemas.base import SCORE_RANGE, UNIT_RANGE
from engine.schemas.panel import PanelAnswer
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.reply_fixtures import CHARS, ITEMS, REPLY_SCHEMAS, long_text, long_value

NAMES = [m.__name__ for m in REPLY_SCHEMAS]


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value)


def _strings_and_lists(value: Any) -> Iterator[str | list[Any]]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings_and_lists(v)
    elif isinstance(value, list):
        yield value
        for v in value:
            yield from _strings_and_lists(v)
    elif isinstance(value, str):
        yield value


def _bounds(model: type[BaseModel]) -> list[tuple[str, float, float]]:
    found = []
    for name, info in model.model_fields.items():
        low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
        high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
        if low is not None and high is not None:
            found.append((name, float(low), float(high)))  # type: ignore[arg-type]
    return found


NUMERIC = [(m, name, low, high) for m in REPLY_SCHEMAS for name, low, high in _bounds(m)]
REQUIRED_TEXT = [(m, name) for m in REPLY_SCHEMAS for name, info in m.model_fields.items()
                 if any(isinstance(x, annotated_types.MinLen) for x in info.metadata)]


@pytest.mark.parametrize("model", REPLY_SCHEMAS, ids=NAMES)
def test_a_reply_with_5000_character_texts_and_12_item_lists_validates(
        model: type[BaseModel]) -> None:
    reply = model.model_validate(long_value(model))
    kept = list(_strings_and_lists(reply.model_dump(mode="json")))
    assert all(len(x) == CHARS for x in kept if isinstance(x, str) and x.startswith("START-"))
    assert all(len(x) == ITEMS for x in kept if isinstance(x, list))


@pytest.mark.parametrize("model", REPLY_SCHEMAS, ids=NAMES)
def test_the_schema_the_gateway_derives_has_no_length_keyword(model: type[BaseModel]) -> None:
    parameters = openai.pydantic_function_tool(model)["function"]["parameters"]
    assert not set(_keys(parameters)) & {"maxLength", "maxItems"}
    assert not set(_keys(model.model_json_schema())) & {"maxLength", "maxItems"}


def test_every_numeric_field_is_covered() -> None:
    assert len(NUMERIC) >= 15          # rubric, strengths, stances, grades, weights, confidences
    assert {m.__name__ for m, *_ in NUMERIC} >= {"RubricScores", "ClaimAssessment", "Verdict",
                                                 "PanelAnswer", "PanelGrade", "Factor"}


@pytest.mark.parametrize(("model", "name", "low", "high"), NUMERIC,
                         ids=[f"{m.__name__}.{n}" for m, n, *_ in NUMERIC])
def test_numbers_out_of_range_still_fail_and_the_range_is_said_in_words(
        model: type[BaseModel], name: str, low: float, high: float) -> None:
    value = long_value(model)
    for wrong in (low - 1, high + 1, high + 0.5 if high == 1 else high * 10):
        with pytest.raises(ValidationError):
            model.model_validate({**value, name: wrong})
    model.model_validate({**value, name: low})
    model.model_validate({**value, name: high})
    words = SCORE_RANGE if high == 10 else UNIT_RANGE
    assert f"from {low:g} to {high:g}" in words
    description = model.model_fields[name].description or ""
    assert words in description
    parameters = openai.pydantic_function_tool(model)["function"]["parameters"]
    assert words in parameters["properties"][name]["description"]


def test_a_description_that_was_there_is_kept_beside_the_range() -> None:
    stance = PanelAnswer.model_fields["stance"].description or ""
    assert stance.startswith("how strongly you endorse the proposition") and SCORE_RANGE in stance


@pytest.mark.parametrize(("model", "name"), REQUIRED_TEXT,
                         ids=[f"{m.__name__}.{n}" for m, n in REQUIRED_TEXT])
def test_an_empty_required_text_or_list_is_still_refused(model: type[BaseModel],
                                                         name: str) -> None:
    value = long_value(model)
    empty = [] if isinstance(value[name], list) else ""
    with pytest.raises(ValidationError):
        model.model_validate({**value, name: empty})


# --------------------------------------------------------------------------------------------
# the engine with replies longer than any limit we had


CLAIMS = 9


def _opening(body: dict[str, Any]) -> dict[str, Any]:
    """Texts past the old limits (a claim 600 characters, a summary 1,200; evidence at 700),
    the whole reply still inside the output cap the call is sent with (a longer one is cut
    off, as a real provider cuts it: tests/integration/test_gateway_realistic.py)."""
    side = "FOR" if "arguing FOR" in body["messages"][0]["content"] else "AGAINST"
    return {"summary": long_text(f"summary-{side}", 2_000),
            "claims": [{"claim": long_text(f"claim-{side}-{i}", 700),
                        "evidence": long_text(f"evidence-{side}-{i}", 700)}
                       for i in range(1, CLAIMS + 1)]}


class _Judges:
    """Scorecards assessing 30 claims (ids A1..A15, B1..B15: nine per side exist), each judge a
    little different so the statistics have something to measure."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        n = self.calls
        rubric = {d: 4 + (n + i) % 5 for i, d in enumerate(
            ("logic", "evidence", "rebuttal", "clarity", "relevance"))}
        claims = [{"id": f"{label}{i}", "strength": 1 + (i * n) % 10, "rebutted": i % 2 == 0,
                   "standing": "stands"} for label in "AB" for i in range(1, 16)]
        return {"position_a": rubric, "position_b": {**rubric, "logic": 3}, "claims": claims,
                "winner": "A", "rationale": long_text(f"rationale-{n}")}


def _says(text: str) -> Any:
    return lambda body: any(text in (m.get("content") or "") for m in body["messages"])


async def test_long_replies_and_long_lists_complete_a_consensus_debate_without_a_reask() -> None:
    async with FakeOpenAI() as fake:
        fake.script(_says("Give your opening"), _opening)
        fake.script(_says("Score position A and position B"), _Judges())
        settings = gateway_settings(fake.base_url)
        prepared = prepare(settings, DebateRequest(topic="Long replies?", mode="consensus"))
        llm = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d-long", settings=settings, llm=llm,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink())
        finally:
            await llm.aclose()
    assert result.status == "completed" and result.complete and not result.degraded
    assert len(fake.requests) == len(prepared.plan.calls)            # nothing was re-asked
    assert len(result.trace_table) == 2 * CLAIMS
    kept = {row.claim for row in result.trace_table}
    assert long_text("claim-FOR-9", 700) in kept and long_text("claim-AGAINST-1", 700) in kept
    assert all(row.strength is not None for row in result.trace_table)
    assert result.consensus is not None and result.consensus.alpha is not None
    claim_items = [i for i in result.consensus.items if i.startswith("claim.")]
    assert len(claim_items) == 2 * CLAIMS          # the 12 ids no claim has are left out
    assert result.rationale and "START-rationale" in result.rationale


# --------------------------------------------------------------------------------------------
# the rehearsal model reads no length keyword and still writes short replies


@pytest.mark.parametrize("model", REPLY_SCHEMAS, ids=NAMES)
async def test_the_rehearsal_model_still_writes_short_replies(model: type[BaseModel]) -> None:
    spec = CallSpec(model="rehearsal", prompt=Prompt(system="s", user="Task: answer"),
                    schema=model, role="pro")
    reply = await RehearsalModel().complete(spec)
    for item in _strings_and_lists(reply.value.model_dump(mode="json")):
        assert len(item) <= (3 if isinstance(item, list) else 200)
