"""Model profiles (engine/provider/profiles.py): what each model accepts, by name and endpoint, and
what a provider's 400 teaches; then the gateway applying them against the fake server, with OpenAI's
and DeepSeek's error bodies word for word."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field

from engine.errors import LLMBadRequest
from engine.provider.gateway import OpenAIGateway
from engine.provider.lessons import Learned
from engine.provider.llm import CallSpec, Prompt
from engine.provider.profiles import (
    ModelProfile,
    is_reasoning_model,
    profile_for,
    provider_of,
    unsupported_parameter,
)
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI


class Opinion(BaseModel):
    view: str = Field(min_length=1)
    score: int = Field(ge=1, le=10)


# OpenAI's and DeepSeek's 400 bodies, as they answer
TEMPERATURE_400 = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0.7 with this model. Only the "
               "default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}
MAX_TOKENS_400 = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}
EFFORT_400 = {"error": {"message": "Unrecognized request argument supplied: reasoning_effort",
                        "type": "invalid_request_error", "param": None, "code": None}}
DEEPSEEK_SCHEMA_400 = {"error": {"message": "This response_format type is unavailable now",
                                 "type": "invalid_request_error", "param": None,
                                 "code": "invalid_request_error"}}
UNRELATED_400 = {"error": {"message": "'messages' must contain at least one message.",
                           "type": "invalid_request_error", "param": "messages", "code": None}}


@pytest.mark.parametrize(("model", "reasoning"), [
    ("o1", True), ("o3-mini", True), ("o4-mini", True), ("gpt-5", True), ("gpt-5-mini", True),
    ("gpt-5-nano", True), ("gpt-5.1", True), ("gpt-5.2-mini", True), ("openai/gpt-5", True),
    ("gpt-5-chat-latest", False), ("gpt-4o-mini", False), ("gpt-4.1", False),
    ("omni-local", False), ("deepseek-chat", False), ("llama3.1:8b", False),
    ("gemini-2.5-flash", True), ("gemini-2.5-pro", True), ("gemini-3-pro-preview", True),
    ("google/gemini-2.5-flash", True), ("gemini-2.0-flash", False), ("claude-sonnet-4-5", False),
])
def test_reasoning_models_are_known_by_name(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


@pytest.mark.parametrize(("endpoint", "provider"), [
    (None, "openai"), ("https://api.openai.com/v1", "openai"),
    ("https://team.openai.azure.com/openai/deployments/x", "azure"),
    ("https://api.deepseek.com", "deepseek"), ("http://127.0.0.1:11434/v1", "local"),
    ("localhost:8000/v1", "local"), ("http://127.0.0.1:41234/v1", "other"),
    ("https://llm.example.com:8000/v1", "other"),
    ("https://api.anthropic.com/v1/", "anthropic"), ("https://openrouter.ai/api/v1", "gateway"),
    ("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini"),
])
def test_the_provider_is_read_from_the_endpoint(endpoint: str | None, provider: str) -> None:
    assert provider_of(endpoint) == provider


@pytest.mark.parametrize(("model", "endpoint", "expected"), [
    ("gpt-4o-mini", None, ModelProfile()),
    ("gpt-5-mini", None, ModelProfile(reasoning=True, sampling=False,
                                      efforts=frozenset({"minimal", "low", "medium", "high"}))),
    ("gpt-5.1", None, ModelProfile(reasoning=True, sampling=False,
                                   efforts=frozenset({"none", "low", "medium", "high"}))),
    ("deepseek-chat", "https://api.deepseek.com", ModelProfile(
        cap="max_tokens", output_mode="json_object", kind="deepseek")),
    ("deepseek-reasoner", "https://api.deepseek.com",
     ModelProfile(cap="max_tokens", output_mode="json_object", sampling=False, kind="deepseek")),
    ("llama3.1:8b", "http://127.0.0.1:11434/v1", ModelProfile(cap="max_tokens", kind="local")),
    ("deepseek-r1:8b", "http://127.0.0.1:40000/v1", ModelProfile(cap="max_tokens", kind="local")),
    ("gpt-5-mini", "http://127.0.0.1:4000/v1", ModelProfile(
        reasoning=True, sampling=False, efforts=frozenset({"minimal", "low", "medium", "high"}),
        kind="other")),
    ("claude-sonnet-4-5", "https://api.anthropic.com/v1/", ModelProfile(
        cap="max_tokens", output_mode="prompt", max_temperature=1.0, kind="anthropic")),
    ("gemini-2.5-flash", "https://generativelanguage.googleapis.com/v1beta/openai/",
     ModelProfile(reasoning=True, efforts=frozenset({"low", "medium", "high"}),
                  cap="max_tokens", kind="gemini")),
    ("openai/gpt-4o-mini", "https://openrouter.ai/api/v1", ModelProfile(
        cap="max_tokens", schema_in_prompt=True, kind="gateway")),
])
def test_documented_profiles(model: str, endpoint: str | None, expected: ModelProfile) -> None:
    assert profile_for(model, endpoint) == expected


@pytest.mark.parametrize(("model", "asked", "sent"), [
    ("gpt-4o-mini", "low", None), ("gpt-5-mini", "low", "low"), ("gpt-5-mini", "none", "minimal"),
    ("gpt-5.1", "minimal", "none"), ("gpt-5.1", "high", "high"), ("o3", None, None),
])
def test_the_effort_sent_is_one_the_model_accepts(model: str, asked: str | None,
                                                   sent: str | None) -> None:
    assert profile_for(model).effort(asked) == sent


@pytest.mark.parametrize(("body", "parameter"), [
    (TEMPERATURE_400, "temperature"), (MAX_TOKENS_400, "max_tokens"),
    (EFFORT_400, "reasoning_effort"), (DEEPSEEK_SCHEMA_400, "response_format"),
    ({"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not "
                           "supported with this model.", "param": "response_format",
                "code": None}}, "response_format"),
    ({"error": {"message": "top_p is not supported", "param": None, "code": None}}, "top_p"),
    (UNRELATED_400, None),
    ({"error": {"message": "Unsupported parameter: 'messages[0].name'", "param": None,
                "code": "unsupported_parameter"}}, None),
])
def test_a_400_names_the_parameter_to_change(body: dict[str, Any], parameter: str | None) -> None:
    error = body["error"]
    assert unsupported_parameter(param=error.get("param"), code=error.get("code"),
                                 message=error["message"]) == parameter


async def test_lessons_change_the_profile_and_end() -> None:
    learned = Learned()
    where = {"endpoint": "https://x.example/v1", "model": "m"}
    base = ModelProfile()
    assert await learned.learn("temperature", base, **where)
    profile = learned.apply(base, **where)
    assert not profile.sends("temperature")
    assert not await learned.learn("temperature", profile, **where)  # nothing left to change
    assert await learned.learn("max_completion_tokens", profile, **where)
    profile = learned.apply(base, **where)
    assert profile.cap == "max_tokens"
    assert await learned.learn("max_tokens", profile, **where)  # both refused: no cap at all
    profile = learned.apply(base, **where)
    assert not profile.sends("max_tokens") and not profile.sends("max_completion_tokens")
    assert await learned.learn("response_format", profile, **where)
    assert learned.apply(base, **where).output_mode == "json_object"
    assert await learned.learn("response_format", learned.apply(base, **where), **where)
    assert learned.apply(base, **where).output_mode == "prompt"
    assert not await learned.learn("response_format", learned.apply(base, **where), **where)
    assert learned.apply(base, endpoint="https://x.example/v1", model="other") == base
    (lesson,) = learned.lessons().values()
    assert "temperature dropped" in lesson.describe()


# --- the gateway applying them --------------------------------------------------------------


def opinion(model: str, **kw: Any) -> CallSpec[Opinion]:
    return CallSpec(model=model, prompt=Prompt(system="Give your view as JSON.", user="Tabs?"),
                    schema=Opinion, role="pro", **kw)


@pytest.fixture
async def make_gateway(fake_openai: FakeOpenAI) -> AsyncIterator[Callable[..., OpenAIGateway]]:
    made: list[OpenAIGateway] = []

    def make(**overrides: Any) -> OpenAIGateway:
        made.append(OpenAIGateway(gateway_settings(fake_openai.base_url, **overrides)))
        return made[-1]

    yield make
    for gateway in made:
        await gateway.aclose()


async def test_a_reasoning_model_gets_its_parameters(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    gateway = make_gateway()
    await gateway.complete(opinion("gpt-5-mini", temperature=0.7, reasoning_effort="low",
                                   max_output_tokens=2000))
    body = fake_openai.requests[0].body
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 2000
    assert body["reasoning_effort"] == "low"
    assert body["response_format"]["type"] == "json_schema"


async def test_a_chat_model_keeps_its_temperature_and_gets_a_cap(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    await make_gateway().complete(opinion("gpt-4o-mini", temperature=0.7, reasoning_effort="low"))
    body = fake_openai.requests[0].body
    assert body["temperature"] == 0.7 and "reasoning_effort" not in body
    # the fake listens on loopback: an unknown endpoint, where max_tokens is best understood
    assert body["max_tokens"] == 4096


async def test_a_refused_parameter_is_dropped_once_and_remembered(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI,
        caplog: pytest.LogCaptureFixture) -> None:
    gateway = make_gateway()
    fake_openai.fail("Tabs?", 400, body=TEMPERATURE_400)
    with caplog.at_level(logging.WARNING, logger="engine.provider.lessons"):
        reply = await gateway.complete(opinion("my-model", temperature=0.7))
        await gateway.complete(opinion("my-model", temperature=0.7))
    first, second, third = (r.body for r in fake_openai.requests)
    assert first["temperature"] == 0.7
    assert "temperature" not in second and "temperature" not in third
    assert reply.calls == 1 and reply.attempts == 2  # the 400 is not billed
    lessons = [r.getMessage() for r in caplog.records if "refused temperature" in r.getMessage()]
    assert len(lessons) == 1, "learned and logged once"
    (lesson,) = gateway.learned.lessons().values()
    assert lesson.describe() == ["temperature dropped"]


async def test_max_tokens_refused_is_sent_as_max_completion_tokens(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    fake_openai.fail("Tabs?", 400, body=MAX_TOKENS_400)
    await make_gateway().complete(opinion("custom-reasoner", max_output_tokens=1500))
    first, second = (r.body for r in fake_openai.requests)
    assert first["max_tokens"] == 1500
    assert "max_tokens" not in second and second["max_completion_tokens"] == 1500


async def test_an_endpoint_without_json_schema_gets_json_mode(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    fake_openai.fail("Tabs?", 400, body=DEEPSEEK_SCHEMA_400)
    gateway = make_gateway()
    reply = await gateway.complete(opinion("some-model"))
    await gateway.complete(opinion("some-model"))
    first, second, third = (r.body for r in fake_openai.requests)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object"}
    assert third["response_format"] == {"type": "json_object"}
    system = second["messages"][0]["content"]
    assert "JSON" in system and '"score"' in system and "an integer from 1 to 10" in system
    assert 1 <= reply.value.score <= 10


async def test_a_400_that_names_nothing_to_change_fails_at_once(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    fake_openai.fail("Tabs?", 400, body=UNRELATED_400)
    with pytest.raises(LLMBadRequest, match="must contain at least one message"):
        await make_gateway().complete(opinion("gpt-4o-mini"))
    assert len(fake_openai.requests) == 1


async def test_a_400_that_stays_after_the_change_is_not_a_loop(
        make_gateway: Callable[..., OpenAIGateway], fake_openai: FakeOpenAI) -> None:
    # an endpoint that answers the same 400 whatever is sent: one change, one retry, then the 400
    fake_openai.fail("Tabs?", 400, body=EFFORT_400, times=None)
    with pytest.raises(LLMBadRequest, match="reasoning_effort"):
        await make_gateway().complete(opinion("o9-proxy", reasoning_effort="low"))
    first, second = (r.body for r in fake_openai.requests)
    assert first["reasoning_effort"] == "low" and "reasoning_effort" not in second
