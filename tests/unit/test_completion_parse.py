"""How the gateway reads a 200's body (engine/provider/gateway/answers.py `completion_in`): in
one validating pass when the reply fits the SDK's types, leniently, as the SDK itself builds
replies, when it does not (local servers and gateways send their own finish reasons and leave
fields out), and as the provider's fault when it is no JSON object at all."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from engine.errors import LLMTransientError
from engine.provider.gateway.answers import completion_in, fault_in

ENDPOINT = "http://127.0.0.1:9/v1"


def reply(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764288000,
        "model": "gpt-5-mini-2025-08-07",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": '{"claim": "yes"}',
                                 "refusal": None}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 700, "total_tokens": 1600,
                  "prompt_tokens_details": {"cached_tokens": 512},
                  "completion_tokens_details": {"reasoning_tokens": 448}}}
    body.update(changes)
    return body


def answer(content: bytes, kind: str = "application/json") -> httpx2.Response:
    return httpx2.Response(200, content=content, headers={"content-type": kind})


def test_a_reply_that_fits_the_types_is_read_whole() -> None:
    completion = completion_in(answer(json.dumps(reply()).encode()), endpoint=ENDPOINT)
    assert completion.choices[0].message.content == '{"claim": "yes"}'
    assert completion.usage is not None
    assert completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 448
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 512
    assert fault_in(completion, endpoint=ENDPOINT) is None


def test_a_local_servers_own_finish_reason_and_missing_fields_are_still_read() -> None:
    body = reply()
    del body["created"], body["object"]
    body["choices"][0]["finish_reason"] = "eos"        # llama.cpp-style, not in the SDK's Literal
    completion = completion_in(answer(json.dumps(body).encode()), endpoint=ENDPOINT)
    assert completion.choices[0].finish_reason == "eos"
    assert completion.choices[0].message.content == '{"claim": "yes"}'
    assert completion.usage is not None and completion.usage.total_tokens == 1600


def test_a_gateways_error_in_a_200_keeps_its_error_for_fault_in() -> None:
    body = {"error": {"code": 502, "message": "Upstream error from provider"}}
    completion = completion_in(answer(json.dumps(body).encode()), endpoint=ENDPOINT)
    fault = fault_in(completion, endpoint=ENDPOINT)
    assert isinstance(fault, LLMTransientError) and "Upstream error" in str(fault)


@pytest.mark.parametrize(("content", "kind"), [
    (b"<html><body>Sign in</body></html>", "text/html"),
    (b"", "application/json"),
    (b"[1, 2, 3]", "application/json"),
    (b'"just a string"', "application/json"),
    (b"\xff\xfe not utf-8", "application/octet-stream"),
])
def test_a_body_that_is_no_json_object_is_the_providers_fault(content: bytes, kind: str) -> None:
    with pytest.raises(LLMTransientError) as caught:
        completion_in(answer(content, kind), endpoint=ENDPOINT)
    assert f"({kind}, {len(content)} bytes)" in str(caught.value)
    assert caught.value.status == 200
