"""Every GenAI name the traces use is one the semantic conventions define (docs/tracing.md),
checked against the `opentelemetry-semantic-conventions` package's constants (the engine, which
never imports OpenTelemetry, spells them out; this pins them): attribute keys, none of them
replaced by another, the operation names, the provider names, the span names' shapes."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, server_attributes

from engine.domain import Event, EventKind, Usage
from engine.provider.llm import CallSpec, Prompt, Reply
from engine.tracing import (
    EVALUATION_EVENT,
    NO_TRACER,
    PROVIDER_HOSTS,
    REHEARSAL_PROVIDER,
    WORKFLOW,
    _reply_attributes,
    _request_attributes,
    evaluations,
    provider_of,
    workflow_attributes,
)

DEFINED = {value for name, value in vars(gen_ai).items()
           if name.startswith("GEN_AI_") and isinstance(value, str)}
#: names the package marks "Replaced by" another (gen_ai.system, the prompt/completion tokens...)
REPLACED = set(re.findall(r'GEN_AI_\w+: Final = "([\w.]+)"\n"""\nDeprecated: Replaced by',
                          inspect.getsource(gen_ai)))
OPERATIONS = {m.value for m in gen_ai.GenAiOperationNameValues}
PROVIDERS = {m.value for m in gen_ai.GenAiProviderNameValues}


class Capturing:
    """A tracer that captures content (the attributes it adds are checked too)."""

    enabled = True
    capture_content = True

    def span(self, name: str, attributes: Any, *, client: bool = False) -> Any:
        return NO_TRACER.span(name, attributes)

    def redact(self, text: str) -> str:
        return text


def _every_key() -> set[str]:
    spec: CallSpec[Any] = CallSpec(step="s1", role="pro", model="gpt-5-mini",
                                   prompt=Prompt(system="sys", user="user"), schema=Usage,
                                   temperature=0.2, max_output_tokens=100)
    reply: Reply[Any] = Reply(value=Usage(), usage=Usage(prompt_tokens=3, completion_tokens=2),
                              model="gpt-5-mini")
    judged = Event(kind=EventKind.JUDGE_SCORED, debate_id="d", data={
        "judge": "judge/technical", "winner": "pro",
        "rubric": {"pro": {"evidence": 7}, "con": {"evidence": 5}}})
    keys = set(_request_attributes(spec, provider=provider_of("https://api.openai.com/v1"),
                                   conversation="d", tracer=Capturing()))
    keys |= set(_reply_attributes(reply, Capturing()))
    keys |= set(workflow_attributes("d", mode="simple", preset="default", topic_chars=3))
    for found in evaluations(judged):
        keys |= set(found)
    return keys


def test_the_sample_builds_every_kind_of_attribute() -> None:
    keys = _every_key()
    assert {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.evaluation.score.value",
            "gen_ai.workflow.name", "server.address"} <= keys


def test_every_gen_ai_attribute_is_defined_and_current() -> None:
    used = {k for k in _every_key() if k.startswith("gen_ai.")}
    assert used - DEFINED == set()
    assert REPLACED >= {"gen_ai.system", "gen_ai.usage.prompt_tokens"}  # the pattern reads
    assert used & REPLACED == set()


def test_the_other_keys_are_the_general_conventions_or_ours() -> None:
    general = {error_attributes.ERROR_TYPE, server_attributes.SERVER_ADDRESS,
               server_attributes.SERVER_PORT}
    others = {k for k in _every_key() if not k.startswith("gen_ai.")}
    assert {k for k in others if not k.startswith("dialectic.")} <= general


def test_operation_event_and_span_names() -> None:
    assert {"chat", "invoke_agent", "invoke_workflow"} <= OPERATIONS
    assert workflow_attributes("d", mode="m", preset="p", topic_chars=1)[
        gen_ai.GEN_AI_OPERATION_NAME] == "invoke_workflow"
    assert WORKFLOW == "dialectic" and EVALUATION_EVENT == "gen_ai.evaluation.result"


@pytest.mark.parametrize(("endpoint", "provider", "address", "port"), [
    ("https://api.openai.com/v1", "openai", "api.openai.com", 443),
    ("https://my-team.openai.azure.com/openai/v1", "azure.ai.openai",
     "my-team.openai.azure.com", 443),
    ("https://api.deepseek.com", "deepseek", "api.deepseek.com", 443),
    ("https://api.groq.com/openai/v1", "groq", "api.groq.com", 443),
    ("https://api.x.ai/v1", "x_ai", "api.x.ai", 443),
    ("https://api.mistral.ai/v1", "mistral_ai", "api.mistral.ai", 443),
    ("https://generativelanguage.googleapis.com/v1beta/openai", "gcp.gemini",
     "generativelanguage.googleapis.com", 443),
    ("http://127.0.0.1:11434/v1", "openai", "127.0.0.1", 11434),   # a local compatible server
    ("https://notapi.deepseek.com.evil.test/v1", "openai", "notapi.deepseek.com.evil.test", 443),
])
def test_the_provider_is_named_by_the_endpoint(endpoint: str, provider: str, address: str,
                                                port: int) -> None:
    assert provider_of(endpoint) == {"gen_ai.provider.name": provider,
                                     "server.address": address, "server.port": port}


def test_every_named_provider_is_a_well_known_value() -> None:
    assert {name for _, name in PROVIDER_HOSTS} <= PROVIDERS
    assert REHEARSAL_PROVIDER not in PROVIDERS and REHEARSAL_PROVIDER.startswith("dialectic.")


def test_a_url_that_does_not_parse_is_openai_without_an_address() -> None:
    assert provider_of("http://[::1") == {"gen_ai.provider.name": "openai"}
