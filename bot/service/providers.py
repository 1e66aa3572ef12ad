"""Builds the LLM client the settings ask for: the OpenAI-compatible gateway, or rehearsal.

Each is imported only when it is built: the gateway loads the `openai` SDK (most of a `dialectic
run`'s start-up), which a rehearsal never calls; a run against a provider never loads the
rehearsal model. The SDK is loaded once for the rest of the process, as start-up is
(`memory.loading`: nothing collected while it loads, frozen after)."""

from __future__ import annotations

from bot.service import memory
from engine.ports import LessonBook
from engine.provider.llm import LLMClient
from engine.settings import EngineSettings


def make_llm(settings: EngineSettings, *, lessons: LessonBook | None = None) -> LLMClient:
    """The client for `settings`; `lessons` keeps what a provider's 400s teach across processes
    (the database's, in a server or a worker)."""
    if settings.is_rehearsal:
        from engine.provider.rehearsal import RehearsalModel  # offline only (docstring)

        return RehearsalModel()
    with memory.loading():
        if settings.providers:   # several at once: a gateway each (engine/provider/routing.py)
            from engine.provider.routing import ProviderRouter  # the SDK (docstring)

            return ProviderRouter(settings, lessons=lessons)
        from engine.provider.gateway import OpenAIGateway  # the SDK: not for a rehearsal

        return OpenAIGateway(settings, lessons=lessons)


def describe(settings: EngineSettings) -> str:
    """One line for logs and banners; never includes a key."""
    if settings.is_rehearsal:
        return ("LLM: offline REHEARSAL model (no OPENAI_API_KEY / OPENAI_BASE_URL set): debates "
                "are placeholders, labelled as such everywhere")
    named = "".join(f"; {name}: {settings.for_provider(name).endpoint()}"
                    for name in sorted(settings.providers))
    default = settings.endpoint() if settings.has_default_endpoint else "no default endpoint"
    return f"LLM: {default} (default model {settings.default_model}){named}"
