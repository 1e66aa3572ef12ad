"""What each model accepts, in one place: whether it reasons, which sampling parameters it takes,
how its output cap is named, which structured-output mode its endpoint speaks, and what a
provider's 400 taught us about it since.

    kind_of(model, endpoint)       which provider serves it (by host, or by the settings' kind)
    profile_for(model, endpoint)   the documented rules, by provider and model-name family
    unsupported_parameter(...)     which parameter a 400 names as unsupported, if any
    (engine/provider/lessons.py keeps what 400s taught, per endpoint and model)

OpenAI's reasoning models (the o-series, the gpt-5 family but gpt-5-chat) take no temperature
or top_p, refuse `max_tokens` in favour of `max_completion_tokens`, accept `reasoning_effort`
and bill their hidden reasoning as output. gpt-5.1 and later also accept the effort "none",
and then sampling parameters again. DeepSeek's endpoint answers a `json_schema` response
format with a 400: it speaks JSON mode (`json_object`) only. Anthropic's OpenAI-SDK
compatibility ignores `response_format` (and `reasoning_effort`) and caps temperature at 1: Claude
is asked for JSON in the prompt, with the schema there. Gemini 2.5 and later think (thinking
counted against the output cap, billed as output, `reasoning_effort` mapped to a thinking
budget). A gateway (OpenRouter, a LiteLLM proxy) passes a model's prefixed id ("openai/gpt-4o",
"anthropic/claude-…") to an upstream that may ignore the schema: it is also said in the prompt.
Local servers (Ollama, vLLM, llama.cpp) know `max_tokens` best, cost nothing unless priced, and
have a context window the output cap must fit in. Anything else a provider refuses is learned
from its 400 (engine/provider/lessons.py).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

OutputMode = Literal["json_schema", "json_object", "prompt"]
CapParameter = Literal["max_completion_tokens", "max_tokens"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
#: who serves a model: decides its profile, its price lookup and what doctor says about it
ProviderKind = Literal["openai", "azure", "deepseek", "anthropic", "gemini", "gateway", "local",
                       "other"]
EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
KINDS: tuple[str, ...] = get_args(ProviderKind)
#: the output modes from the richest to the plainest: a refused mode falls to the next
OUTPUT_MODES: tuple[OutputMode, ...] = get_args(OutputMode)
CAPS: tuple[CapParameter, ...] = get_args(CapParameter)

_O_SERIES = re.compile(r"^o\d")
_GPT5 = re.compile(r"^gpt-5(?:\.(\d+))?(?:-|$)")
_GEMINI_THINKING = re.compile(r"^gemini-(?:2\.5|[3-9])")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelProfile:
    """How to ask one model on one endpoint for a structured reply."""

    reasoning: bool = False
    efforts: frozenset[str] = frozenset()   # reasoning_effort values the model accepts
    sampling: bool = True                    # takes temperature / top_p
    max_temperature: float = 2.0             # Anthropic's endpoint caps it at 1
    cap: CapParameter = "max_completion_tokens"
    output_mode: OutputMode = "json_schema"
    schema_in_prompt: bool = False           # said in the prompt too (a gateway's upstream)
    dropped: frozenset[str] = frozenset()    # parameters a 400 told us to leave out
    kind: ProviderKind = "openai"

    def sends(self, parameter: str) -> bool:
        return parameter not in self.dropped

    @property
    def priced(self) -> bool:
        """Whether the price library may price it: a local server's model costs nothing."""
        return self.kind != "local"

    def effort(self, asked: str | None) -> str | None:
        """The effort to send: none for a model that does not reason; the asked one, or the
        nearest the model accepts ("minimal" and "none" trade places across gpt-5 and
        gpt-5.1)."""
        if not self.reasoning or asked is None:
            return None
        if asked in self.efforts:
            return asked
        nearest = {"none": "minimal", "minimal": "none"}.get(asked)
        if nearest in self.efforts:
            return nearest
        return "low" if "low" in self.efforts else None


#: hosts of the providers with their own rules (a suffix matches sub-domains too)
_HOSTS: tuple[tuple[str, ProviderKind], ...] = (
    ("api.openai.com", "openai"), (".openai.azure.com", "azure"),
    (".cognitiveservices.azure.com", "azure"), (".services.ai.azure.com", "azure"),
    ("deepseek.com", "deepseek"), ("api.anthropic.com", "anthropic"),
    ("generativelanguage.googleapis.com", "gemini"), ("openrouter.ai", "gateway"),
)
#: the ports local servers listen on by default: Ollama, vLLM, llama.cpp's server, LM Studio
_LOCAL_PORTS = frozenset({11434, 8000, 8080, 1234})


@lru_cache(maxsize=256)  # asked several times per LLM call, of a few endpoints
def provider_of(endpoint: str | None) -> ProviderKind:
    """The provider behind `endpoint` by its host (None: OpenAI): "openai", "azure", "deepseek",
    "anthropic", "gemini", "gateway" (OpenRouter), "local" (a loopback or private address on a
    local server's usual port), else "other"."""
    if not endpoint:
        return "openai"
    parts = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}")
    try:
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return "other"
    for known, kind in _HOSTS:
        if host == known.lstrip(".") or host.endswith(known if known.startswith(".")
                                                      else f".{known}"):
            return kind
    if _is_private(host) and port in _LOCAL_PORTS:
        return "local"
    return "other"


def _is_private(host: str) -> bool:
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def kind_of(model: str, endpoint: str | None, configured: str | None = None) -> ProviderKind:
    """Who serves `model` at `endpoint`: the configured kind (DIALECTIC_PROVIDER_KIND), else the
    host's; on an unknown private host, a model named with an Ollama tag ("llama3.1:8b") is a
    local server's."""
    if configured in KINDS:
        return configured  # type: ignore[return-value]
    kind = provider_of(endpoint)
    if kind == "other" and ":" in model and on_private_host(endpoint):
        return "local"
    return kind


def on_private_host(endpoint: str | None) -> bool:
    """Whether `endpoint` is on this machine or a private network (loopback, a private
    address, localhost, a .local name)."""
    if not endpoint:
        return False
    try:
        host = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}").hostname
    except ValueError:
        return False
    return _is_private((host or "").lower())


_SNAPSHOT_DATE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@lru_cache(maxsize=4096)   # pure, and asked for every planned call of every estimate
def undated(model: str) -> str:
    """The name a dated snapshot is asked by: the API answers "gpt-4o-mini" with
    "gpt-4o-mini-2024-07-18"; prices configured and sizes learned follow the name asked."""
    return _SNAPSHOT_DATE.sub("", model)


def behind_prefix(model: str) -> str:
    """The model behind a gateway's provider prefix: "openai/gpt-4o-mini" -> "gpt-4o-mini",
    "meta-llama/llama-3.1-8b-instruct" -> "llama-3.1-8b-instruct"."""
    return model.rsplit("/", 1)[-1]


@lru_cache(maxsize=4096)   # pure, and asked for every planned call of every estimate
def is_reasoning_model(model: str) -> bool:
    """Reasoning families by name: OpenAI's o1, o3, o4-mini …, gpt-5, gpt-5-mini, gpt-5.1 … (not
    gpt-5-chat, which is a chat model), and Gemini 2.5 and later, which think by default. A
    provider prefix ("openai/gpt-5") is ignored."""
    name = behind_prefix(model.lower())
    if _O_SERIES.match(name) or _GEMINI_THINKING.match(name):
        return True
    return bool(_GPT5.match(name)) and "gpt-5-chat" not in name


def profile_for(model: str, endpoint: str | None = None, *, kind: str | None = None
                ) -> ModelProfile:
    """The documented profile of `model` served at `endpoint` (by `kind` when configured)."""
    provider = kind_of(model, endpoint, kind)
    name = behind_prefix(model.lower())
    if provider == "local":
        return ModelProfile(cap="max_tokens", kind="local")
    if name.startswith("claude") or provider == "anthropic":
        # response_format and reasoning_effort ignored, temperature capped at 1 (its docs)
        return ModelProfile(cap="max_tokens", output_mode="prompt", max_temperature=1.0,
                            kind=provider)
    if _GEMINI_THINKING.match(name):
        return ModelProfile(reasoning=True, efforts=frozenset({"low", "medium", "high"}),
                            cap="max_tokens", kind=provider,
                            schema_in_prompt=provider == "gateway")
    if provider == "deepseek" or name.startswith("deepseek"):
        # JSON mode only; `max_tokens` is its cap; the reasoner ignores sampling parameters
        return ModelProfile(cap="max_tokens", output_mode="json_object",
                            sampling="reasoner" not in name, kind=provider)
    gateway = provider == "gateway"
    if is_reasoning_model(name):
        efforts = {"minimal", "low", "medium", "high"}
        gpt5 = _GPT5.match(name)
        if gpt5 is not None and gpt5.group(1) is not None:  # gpt-5.1 and later
            efforts = {"none", "low", "medium", "high"}
        return ModelProfile(reasoning=True, efforts=frozenset(efforts), sampling=False,
                            kind=provider, schema_in_prompt=gateway)
    if provider in ("other", "gateway"):
        return ModelProfile(cap="max_tokens", kind=provider, schema_in_prompt=gateway)
    return ModelProfile(kind=provider)


# --------------------------------------------------------------------------------------------
# what a 400 says


_UNSUPPORTED_TEXT = (
    re.compile(r"Unsupported (?:parameter|value): '([A-Za-z_.]+)'"),
    re.compile(r"Unrecognized request arguments? supplied: ([A-Za-z_]+)"),
    re.compile(r"'([A-Za-z_]+)' (?:is not supported|is unsupported|not supported)"),
    re.compile(r"\b([a-z]+_[a-z_]+) (?:is not supported|is unsupported|not supported)"),
    re.compile(r"[Uu]nknown (?:parameter|field|argument):? '?([A-Za-z_]+)'?"),
    re.compile(r"[Ee]xtra (?:inputs|fields) (?:are|is) not permitted.*?'([A-Za-z_]+)'"),
)
_RESPONSE_FORMAT_TEXT = re.compile(
    r"response_format|json_schema|structured output|This response_format type", re.I)
#: the request parameters a 400 may take away (the others are the request itself)
ADAPTABLE = frozenset({"temperature", "top_p", "reasoning_effort", "max_completion_tokens",
                       "max_tokens", "response_format"})


def unsupported_parameter(*, param: str | None, code: str | None, message: str) -> str | None:
    """The request parameter a 400 refuses, when it names one we may leave out or change;
    "response_format" when the endpoint refuses the structured-output mode."""
    candidates: list[str] = []
    if param:
        candidates.append(param.split(".", 1)[0])
    for pattern in _UNSUPPORTED_TEXT:
        found = pattern.search(message)
        if found is not None:
            candidates.append(found.group(1).split(".", 1)[0])
    for name in candidates:
        if name in ADAPTABLE:
            return name
    if code in ("unsupported_parameter", "unsupported_value") or _RESPONSE_FORMAT_TEXT.search(
            message):
        if _RESPONSE_FORMAT_TEXT.search(message) or (param or "").startswith("response_format"):
            return "response_format"
    return None




# --------------------------------------------------------------------------------------------
# what a 400 says about the context window

_WINDOW_TEXT = (
    # vLLM (and OpenAI's own wording): "This model's maximum context length is 8192 tokens."
    re.compile(r"maximum context length is (\d+) tokens", re.I),
    # llama.cpp's server: "... (4121 tokens) exceeds the available context size (4096 tokens)"
    re.compile(r"available context size \((\d+) tokens\)", re.I),
    re.compile(r"context (?:window|length|size)(?: of| is)? (\d+) tokens", re.I),
)


def window_in_error(message: str, body: object = None) -> int | None:
    """The context window a 400 names ("maximum context length is 8192 tokens"), or the `n_ctx`
    llama.cpp's server puts in its error body; None when it names none."""
    if isinstance(body, dict) and isinstance(body.get("n_ctx"), int):
        return int(body["n_ctx"])
    for pattern in _WINDOW_TEXT:
        found = pattern.search(message)
        if found is not None:
            return int(found.group(1))
    return None
