"""Model names that say which configured provider answers them: `anthropic:claude-sonnet-4-5`.

    split_model(model, providers)   ("anthropic", "claude-sonnet-4-5"), or (None, model)
    qualified(provider, model)      the name again, prefixed when a provider is named
    unknown_prefix(model, providers) why a prefix looks like a provider nobody configured

The rule: a prefix before the first colon counts only when it names a configured provider
(`[providers.NAME]`). Everything else is a bare model name for the default endpoint
(OPENAI_BASE_URL), so an Ollama tag (`llama3:8b`, `deepseek-r1:7b`), an OpenAI fine-tune
(`ft:gpt-4o-mini:acme::abc`) and a gateway id (`openai/gpt-4o-mini`, a slash) keep working.
A prefix that is a provider kind's word (`anthropic:`, `gemini:`) or a near miss of a configured
name (`antropic:`) while the rest is no size tag is taken for a mistake: `unknown_prefix` says so,
and settings and requests refuse it before anything is spent.

Pure and importing nothing from the engine: the settings, the gateway and the panels' model
families (which strip the prefix) all use it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

#: the words a provider's kind is written with (engine/provider/profiles.py `ProviderKind`)
_KIND_WORDS = frozenset({"openai", "azure", "deepseek", "anthropic", "gemini", "google",
                         "gateway", "openrouter", "local", "ollama", "vllm", "mistral"})
#: what follows an Ollama model's colon: a size ("8b", "1.5b", "e2b"), "latest", a quantisation
_TAG = re.compile(r"^(?:e?\d|latest\b|q\d|fp\d|instruct\b|v\d)", re.I)
NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"


def split_model(model: str, providers: Collection[str]) -> tuple[str | None, str]:
    """(provider, model) when `model` starts with a configured provider's name and a colon;
    (None, model) otherwise (the default endpoint's model, colons and slashes kept)."""
    prefix, colon, rest = model.partition(":")
    if colon and rest and prefix in providers:
        return prefix, rest
    return None, model


def qualified(provider: str | None, model: str) -> str:
    """`model` as named with its provider: "anthropic:claude-…", or the bare name."""
    return f"{provider}:{model}" if provider else model


def unknown_prefix(model: str, providers: Collection[str]) -> str | None:
    """One line when `model` looks prefixed with a provider that is not configured; None when
    it is routed (a configured prefix) or a bare name (an Ollama tag, a fine-tune)."""
    prefix, colon, rest = model.partition(":")
    if not colon or not rest or prefix in providers or _TAG.match(rest):
        return None
    close = difflib.get_close_matches(prefix, list(providers), n=1, cutoff=0.75)
    if prefix not in _KIND_WORDS and not close:
        return None
    known = ", ".join(sorted(providers)) or "none"
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"model {model!r} names the provider {prefix!r}, which is not configured{hint}: "
            f"add [providers.{prefix}] to dialectic.toml, or write the bare model name for "
            f"OPENAI_BASE_URL (configured providers: {known})")


__all__ = ["NAME_PATTERN", "qualified", "split_model", "unknown_prefix"]
