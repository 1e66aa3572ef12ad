"""The gateway encodes a request's body itself (engine/provider/gateway/requests.py `encoded`),
faster than the SDK would: the bytes must be exactly the SDK's own encoding of the same body,
for every model family's body, every kind of text, and fail where the SDK's failed."""

from __future__ import annotations

from typing import Any

import pytest
from openai._utils._json import openapi_dumps

from engine.provider.gateway import requests
from engine.provider.llm import CallSpec, Prompt
from engine.provider.profiles import profile_for
from engine.schemas.panel import PanelGrade
from engine.schemas.procon import Closing, Position, Scorecard, Verdict
from engine.schemas.redteam import RedTeamChallenge

EVERY_ESCAPE = "".join(chr(c) for c in range(0x00, 0x80)) + "\u0085\u00a0\u2028\u2029\ufeff"
TEXTS = [
    "", "plain words", EVERY_ESCAPE, 'quote " backslash \\ slash / tab \t newline \n',
    "accents é ü ß, dashes — – and “curly quotes”", "astral 🏳️‍🌈 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U000e0041",
    "## Pro (P) — opening\nThe team should adopt “microservices”. " * 400, "\x00 NUL \x7f DEL",
]
MODELS = ["gpt-4o-mini", "gpt-5-mini", "o3-mini", "deepseek-chat", "llama3.1:8b",
          "claude-3-5-sonnet"]
SCHEMAS: list[type[Any]] = [Position, Closing, Scorecard, Verdict, PanelGrade, RedTeamChallenge]


def _body(model: str, schema: type[Any], system: str, user: str, *, temperature: float | None,
          cap: int = 4000, extra: list[Any] | None = None) -> dict[str, Any]:
    spec = CallSpec(model=model, prompt=Prompt(system=system, user=user), schema=schema,
                    role="judge", temperature=temperature, reasoning_effort="low")
    return requests.body(spec, extra or [], profile_for(model), cap=cap)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("temperature", [None, 0.0, 0.2, 0.7, 1.0, 1e-05, 1.3333333333333333])
def test_every_family_s_body_is_the_sdk_s_bytes(model: str, schema: type[Any],
                                                temperature: float | None) -> None:
    body = _body(model, schema, "You are a judge — fair.", TEXTS[6], temperature=temperature)
    assert requests.encoded(body, schema) == openapi_dumps(body)


@pytest.mark.parametrize("system", TEXTS[:4])
@pytest.mark.parametrize("user", TEXTS)
def test_every_kind_of_text_is_the_sdk_s_bytes(system: str, user: str) -> None:
    body = _body("gpt-4o-mini", Position, system, user, temperature=0.7)
    assert requests.encoded(body, Position) == openapi_dumps(body)


def test_a_re_ask_s_messages_and_an_unknown_format_are_the_sdk_s_bytes() -> None:
    extra = [{"role": "assistant", "content": "{\"summary\": 1}"},
             {"role": "user", "content": "Your reply did not match — try again."}]
    body = _body("gpt-4o-mini", Position, "sys", "user", temperature=0.5, extra=extra)
    assert requests.encoded(body, Position) == openapi_dumps(body)
    # the format of another schema than the one named: encoded as it is, not as the named one's
    body["response_format"] = requests.json_schema_format(Closing)
    assert requests.encoded(body, Position) == openapi_dumps(body)
    # a message that is not all strings (content parts): the SDK's way
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi é"}]}]
    assert requests.encoded(body, Position) == openapi_dumps(body)


def test_a_different_body_gives_different_bytes() -> None:
    one = _body("gpt-4o-mini", Position, "sys", "one", temperature=0.5)
    two = _body("gpt-4o-mini", Position, "sys", "two", temperature=0.5)
    assert requests.encoded(one, Position) != requests.encoded(two, Position)
    assert b'"content":"two"' in requests.encoded(two, Position)


@pytest.mark.parametrize("where", ["system", "user"])
def test_a_lone_surrogate_fails_as_the_sdk_s_encoding_does(where: str) -> None:
    texts = {"system": "sys", "user": "user", where: "broken \ud800 text"}
    body = _body("gpt-4o-mini", Position, texts["system"], texts["user"], temperature=0.5)
    with pytest.raises(UnicodeEncodeError):
        openapi_dumps(body)
    with pytest.raises(UnicodeEncodeError):
        requests.encoded(body, Position)


def test_nan_fails_as_the_sdk_s_encoding_does() -> None:
    body = _body("gpt-4o-mini", Position, "sys", "user", temperature=0.5)
    body["temperature"] = float("nan")
    with pytest.raises(ValueError, match="JSON compliant"):
        openapi_dumps(body)
    with pytest.raises(ValueError, match="JSON compliant"):
        requests.encoded(body, Position)
