"""Which family a model belongs to ("openai", "anthropic", "google", "meta", "mistral", "qwen",
"deepseek", ...), read from its name, for panels that mix families and for self-vote exclusion
(engine/protocols/self_vote.py). Pure: the settings add what a name cannot say (an override
per name, the model an Azure deployment was seen answering as) in `EngineSettings.family_of`.

How a name is read, in order:

1. an override (`[families]` in dialectic.toml) for the name as written, or for the model part
   after a `provider:` prefix;
2. a `name:rest` form: when `name` is itself a model's name (`llama3:8b`, an Ollama tag), the
   family is `name`'s; otherwise `name` is a provider (`work:gpt-4o-mini`) and the family is
   read from `rest`;
3. a gateway's `vendor/model` id: the vendor when it is one we know (`meta-llama/...` is meta,
   `mistralai/...` mistral), else the part after the last `/` (profiles.behind_prefix);
4. the model's name by its family prefix (gpt-, o3, claude, gemini, llama, qwen ...), then by a
   family word anywhere in it (`prod-claude-sonnet`), else "unknown".

"unknown" never matches another "unknown": a judge whose family nobody knows is never excluded,
and never counts as "another family" either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.provider.profiles import behind_prefix, undated
from engine.vocabulary import UNKNOWN_FAMILY

UNKNOWN = UNKNOWN_FAMILY

#: a family's name in overrides: lower case, as the built-in ones
FAMILY_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

#: gateway vendors (OpenRouter's, Hugging Face's organisations) -> family
_VENDORS: dict[str, str] = {
    "openai": "openai", "azure": "openai", "anthropic": "anthropic", "google": "google",
    "vertex_ai": "google", "gemini": "google", "meta-llama": "meta", "meta": "meta",
    "facebook": "meta", "mistralai": "mistral", "mistral": "mistral", "qwen": "qwen",
    "alibaba": "qwen", "deepseek": "deepseek", "deepseek-ai": "deepseek", "x-ai": "xai",
    "xai": "xai", "cohere": "cohere", "coherelabs": "cohere", "microsoft": "microsoft",
    "amazon": "amazon", "bedrock": "amazon",
}

#: the start of a model's own name -> family (the first that matches)
_PREFIXES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?:gpt|chatgpt|davinci|babbage|text-|codex|o\d(?:$|[-.]))"), "openai"),
    (re.compile(r"^claude"), "anthropic"),
    (re.compile(r"^(?:gemini|gemma|palm|bison|learnlm)"), "google"),
    (re.compile(r"^(?:llama|meta-llama|codellama)"), "meta"),
    (re.compile(r"^(?:mistral|mixtral|codestral|ministral|magistral|pixtral|devstral|"
                r"open-mistral|open-mixtral)"), "mistral"),
    (re.compile(r"^(?:qwen|qwq)"), "qwen"),
    (re.compile(r"^deepseek"), "deepseek"),
    (re.compile(r"^grok"), "xai"),
    (re.compile(r"^(?:command|c4ai|aya)"), "cohere"),
    (re.compile(r"^phi-?\d"), "microsoft"),
    (re.compile(r"^(?:nova-|titan-|amazon)"), "amazon"),
)

#: a family's word anywhere in a name between separators (`prod-claude-sonnet`, `my_gpt4o`)
_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|[-_.@ ])(?:gpt|o1|o3|o4)(?=$|[-_.\d])"), "openai"),
    (re.compile(r"(?:^|[-_.@ ])claude"), "anthropic"),
    (re.compile(r"(?:^|[-_.@ ])(?:gemini|gemma)"), "google"),
    (re.compile(r"(?:^|[-_.@ ])llama"), "meta"),
    (re.compile(r"(?:^|[-_.@ ])(?:mistral|mixtral)"), "mistral"),
    (re.compile(r"(?:^|[-_.@ ])qwen"), "qwen"),
    (re.compile(r"(?:^|[-_.@ ])deepseek"), "deepseek"),
)


def _by_name(name: str) -> str:
    """The family a bare model name (no provider prefix, no gateway vendor) says."""
    base = undated(name.strip().lower())
    for pattern, family in _PREFIXES:
        if pattern.match(base):
            return family
    for pattern, family in _WORDS:
        if pattern.search(base):
            return family
    return UNKNOWN


def _without_provider(model: str) -> str:
    """`work:gpt-4o-mini` -> `gpt-4o-mini`; `llama3:8b` (a model's name before the colon, an
    Ollama tag after) and names without a colon are kept."""
    head, colon, rest = model.partition(":")
    if not colon or "/" in head or _by_name(head) != UNKNOWN:
        return model
    return rest


def _override(model: str, overrides: Mapping[str, str]) -> str | None:
    if not overrides:
        return None
    lowered = {k.strip().lower(): v for k, v in overrides.items()}
    for name in (model, _without_provider(model)):
        found = lowered.get(name.strip().lower())
        if found:
            return found
    return None


def family_of(model: str | None, overrides: Mapping[str, str] | None = None) -> str:
    """The family of `model` (the module docstring's rules), "unknown" when no rule knows it."""
    if not model or not model.strip():
        return UNKNOWN
    found = _override(model, overrides or {})
    if found is not None:
        return found
    name = _without_provider(model.strip())
    if name != model.strip() and ":" in name:   # `ollama:llama3:8b`: the tag stays
        return family_of(name, overrides)
    name = name.partition(":")[0] if _by_name(name.partition(":")[0]) != UNKNOWN else name
    if "/" in name:
        vendor = name.split("/", 1)[0].lower()
        if vendor in _VENDORS:
            return _VENDORS[vendor]
    return _by_name(behind_prefix(name))


__all__ = ["FAMILY_NAME", "UNKNOWN", "family_of"]
