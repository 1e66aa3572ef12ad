"""Builds the LLM client the settings ask for: the OpenAI-compatible gateway, or rehearsal.

Each is imported only when it is built: the gateway loads the `openai` SDK (most of a `dialectic
run`'s start-up), which a rehearsal never calls; a run against a provider never loads the
rehearsal model."""

from __future__ import annotations

from engine.provider.llm import LLMClient
from engine.settings import EngineSettings


def make_llm(settings: EngineSettings) -> LLMClient:
    if settings.is_rehearsal:
        from engine.provider.rehearsal import RehearsalModel  # offline only (docstring)

        return RehearsalModel()
    from engine.provider.gateway import OpenAIGateway  # the SDK: not for a rehearsal (docstring)

    return OpenAIGateway(settings)


def describe(settings: EngineSettings) -> str:
    """One line for logs and banners; never includes a key."""
    if settings.is_rehearsal:
        return ("LLM: offline REHEARSAL model (no OPENAI_API_KEY / OPENAI_BASE_URL set): debates "
                "are placeholders, labelled as such everywhere")
    return f"LLM: {settings.endpoint()} (default model {settings.default_model})"
