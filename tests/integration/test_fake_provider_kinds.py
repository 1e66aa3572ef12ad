"""The fake's other providers answer as their documentation says, seen through the real `openai`
client (what tests/fakes/provider_kinds.py promises): Gemini's usage and list-wrapped errors,
a gateway's `usage.cost` and 200-with-error, vLLM's and llama.cpp's windows and 400 wording,
Ollama's `<think>`, Anthropic's prose refusals, Azure's deployments."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI

MESSAGES: list[Any] = [{"role": "system", "content": "Reply in JSON."},
                       {"role": "user", "content": "Should we move billing to PostgreSQL?"}]
LONG: list[Any] = [{"role": "system", "content": "Context. " * 4000}, MESSAGES[1]]


def client(fake: FakeOpenAI) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="k", base_url=fake.base_url, max_retries=0)


async def test_gemini_counts_thoughts_only_in_the_total() -> None:
    async with FakeOpenAI(provider="gemini") as fake:
        done = await client(fake).chat.completions.create(model="gemini-2.5-flash",
                                                          messages=MESSAGES)
    usage = done.usage
    assert usage is not None and usage.completion_tokens_details is None
    thoughts = usage.total_tokens - usage.prompt_tokens - usage.completion_tokens
    assert thoughts >= usage.completion_tokens   # 1-3x the reply by default


async def test_geminis_errors_are_list_wrapped_with_a_retry_delay() -> None:
    async with FakeOpenAI(provider="gemini", rate_limit=(1, 60.0)) as fake:
        ask = client(fake)
        await ask.chat.completions.create(model="gemini-2.5-flash", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as caught:
            await ask.chat.completions.create(model="gemini-2.5-flash", messages=MESSAGES)
    (wrapped,) = caught.value.body  # type: ignore[misc]
    assert wrapped["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert wrapped["error"]["details"][0]["retryDelay"].endswith("s")


async def test_a_gateway_bills_in_usage_cost_and_may_answer_200_with_an_error() -> None:
    async with FakeOpenAI(provider="gateway") as fake:
        fake.gateway_error("PostgreSQL", 502)
        raw = await client(fake).chat.completions.with_raw_response.create(
            model="openai/gpt-4o-mini", messages=MESSAGES)
        assert raw.http_response.status_code == 200
        assert raw.http_response.json()["error"]["code"] == 502
        done = await client(fake).chat.completions.create(model="openai/gpt-4o-mini",
                                                          messages=MESSAGES)
    assert done.usage is not None and done.usage.model_extra["cost"] == fake.gateway_bill() > 0


async def test_vllm_lists_its_window_and_refuses_past_it_in_its_words() -> None:
    async with FakeOpenAI(provider="vllm", context_window=8192, serves=("qwen",)) as fake:
        listed = await client(fake).models.list()
        with pytest.raises(openai.BadRequestError) as caught:
            await client(fake).chat.completions.create(model="qwen", messages=LONG,
                                                       max_tokens=4000)
    assert listed.data[0].model_extra["max_model_len"] == 8192
    assert "maximum context length is 8192 tokens" in str(caught.value)


async def test_llamacpp_says_n_ctx_and_stops_at_the_window() -> None:
    async with FakeOpenAI(provider="llamacpp", context_window=4096) as fake:
        props = await client(fake).get(f"http://{fake.host}:{fake.port}/props", cast_to=object)
        done = await client(fake).chat.completions.create(
            model="qwen", messages=[{"role": "system", "content": "Context. " * 1800},
                                    MESSAGES[1]], max_tokens=4000)
    assert props["default_generation_settings"]["n_ctx"] == 4096  # type: ignore[index]
    assert done.choices[0].finish_reason == "length"


async def test_ollamas_thinking_model_writes_think_blocks_with_braces() -> None:
    async with FakeOpenAI(provider="ollama") as fake:
        done = await client(fake).chat.completions.create(model="deepseek-r1:8b",
                                                          messages=MESSAGES)
    text = done.choices[0].message.content or ""
    assert text.startswith("<think>") and "{" in text.split("</think>")[0]


async def test_anthropic_refuses_in_prose_and_azure_answers_as_the_deployed_model() -> None:
    async with FakeOpenAI(provider="anthropic") as fake:
        fake.refuse("PostgreSQL", "I can't help with that.")
        done = await client(fake).chat.completions.create(model="claude-sonnet-4-5",
                                                          messages=MESSAGES)
    assert done.choices[0].message.content == "I can't help with that."
    assert done.choices[0].message.refusal is None
    async with FakeOpenAI(provider="azure", deployments={"prod": "gpt-4o-mini"}) as fake:
        done = await client(fake).chat.completions.create(model="prod", messages=MESSAGES)
    assert done.model.startswith("gpt-4o-mini-")
