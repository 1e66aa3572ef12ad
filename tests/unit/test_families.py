"""family_of: a model's family from its name, with a provider prefix, a gateway vendor, an Ollama
tag, an override, or the model an Azure deployment was seen answering as."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.provider.families import UNKNOWN, family_of
from engine.settings import EngineSettings

TABLE = [
    ("gpt-4o-mini", "openai"),
    ("gpt-4o-mini-2024-07-18", "openai"),
    ("o3-mini", "openai"),
    ("o1", "openai"),
    ("gpt-5.1", "openai"),
    ("claude-3-5-haiku-latest", "anthropic"),
    ("claude-sonnet-4-5", "anthropic"),
    ("gemini-2.5-flash", "google"),
    ("gemma2:9b", "google"),
    ("mistral-small-latest", "mistral"),
    ("mixtral-8x7b", "mistral"),
    ("qwen2.5-7b-instruct", "qwen"),
    ("deepseek-chat", "deepseek"),
    ("grok-2", "xai"),
    ("command-r-plus", "cohere"),
    ("phi3:mini", "microsoft"),
    # gateway ids: the vendor, or the model after it
    ("openai/gpt-4o-mini", "openai"),
    ("anthropic/claude-3.5-haiku", "anthropic"),
    ("meta-llama/Llama-3.1-8B", "meta"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
    ("deepseek-ai/DeepSeek-R1", "deepseek"),
    ("somehost/llama-3.1-70b", "meta"),
    # an Ollama tag: the part before the colon is a model, kept
    ("llama3:8b", "meta"),
    ("llama3.1:70b-instruct-q4_K_M", "meta"),
    ("deepseek-r1:8b", "deepseek"),
    ("qwen2.5:7b", "qwen"),
    # a named provider's prefix: the part before the colon is no model, dropped
    ("work:gpt-4o-mini", "openai"),
    ("anthropic:claude-3-5-haiku-latest", "anthropic"),
    ("ollama:llama3:8b", "meta"),
    ("router:meta-llama/Llama-3.1-8B", "meta"),
    ("azure:prod-gpt4o", "openai"),
    # a family's word inside a deployment's name
    ("prod-claude-sonnet", "anthropic"),
    # nothing says
    ("prod-reasoner", UNKNOWN),
    ("rehearsal", UNKNOWN),
    ("", UNKNOWN),
    ("mymodel:latest", UNKNOWN),
]


@pytest.mark.parametrize(("model", "family"), TABLE)
def test_family_of(model: str, family: str) -> None:
    assert family_of(model) == family


def test_an_override_names_the_family_of_a_name_that_does_not_say() -> None:
    overrides = {"Prod-Reasoner": "openai"}
    assert family_of("prod-reasoner", overrides) == "openai"
    assert family_of("corp:prod-reasoner", overrides) == "openai"   # after a provider prefix
    assert family_of("gpt-4o", {"gpt-4o": "azure-openai"}) == "azure-openai"  # it wins
    assert family_of("prod-reasoner", {"other": "openai"}) == UNKNOWN


def test_the_settings_read_overrides_then_the_model_a_deployment_answered_as() -> None:
    settings = EngineSettings(openai_api_key="k", openai_base_url="https://x.example/v1",
                              families={"house-model": "mistral"})
    assert settings.family_of("house-model") == "mistral"
    assert settings.family_of("prod-reasoner") == UNKNOWN
    settings.answers.learn(settings.endpoint_key, "prod-reasoner", "o4-mini-2025-04-16")
    assert settings.family_of("prod-reasoner") == "openai"
    assert settings.family_of("rehearsal") == UNKNOWN and settings.family_of(None) == UNKNOWN


def test_a_family_name_in_settings_is_checked() -> None:
    with pytest.raises(ValidationError, match="is no family name"):
        EngineSettings(families={"m": "Open AI"})
