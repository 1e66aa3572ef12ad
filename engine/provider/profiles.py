"""What each model accepts, in one place: whether it reasons, which sampling parameters it takes,
how its output cap is named, which structured-output mode its endpoint speaks, and what a
provider's 400 taught us about it since.

    profile_for(model, endpoint)   the documented rules, by model-name prefix and endpoint
    Learned                        what 400s taught (per endpoint and model), applied on top
    unsupported_parameter(...)     which parameter a 400 names as unsupported, if any

OpenAI's reasoning models (the o-series, the gpt-5 family but gpt-5-chat) take no temperature
or top_p, refuse `max_tokens` in favour of `max_completion_tokens`, accept `reasoning_effort`
and bill their hidden reasoning as output. gpt-5.1 and later also accept the effort "none",
and then sampling parameters again. DeepSeek's endpoint answers a `json_schema` response
format with a 400: it speaks JSON mode (`json_object`) only. Local servers (Ollama, vLLM,
llama.cpp) know `max_tokens` best. Anything else a provider refuses is learned from its 400:
the parameter is dropped (or the cap renamed, or the output mode lowered), the call is sent
again once, and the lesson is kept for that endpoint and model.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, replace
from typing import Literal, get_args
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

OutputMode = Literal["json_schema", "json_object", "prompt"]
CapParameter = Literal["max_completion_tokens", "max_tokens"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
#: the output modes from the richest to the plainest: a refused mode falls to the next
OUTPUT_MODES: tuple[OutputMode, ...] = get_args(OutputMode)
CAPS: tuple[CapParameter, ...] = get_args(CapParameter)

_O_SERIES = re.compile(r"^o\d")
_GPT5 = re.compile(r"^gpt-5(?:\.(\d+))?(?:-|$)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelProfile:
    """How to ask one model on one endpoint for a structured reply."""

    reasoning: bool = False
    efforts: frozenset[str] = frozenset()   # reasoning_effort values the model accepts
    sampling: bool = True                    # takes temperature / top_p
    cap: CapParameter = "max_completion_tokens"
    output_mode: OutputMode = "json_schema"
    dropped: frozenset[str] = frozenset()    # parameters a 400 told us to leave out

    def sends(self, parameter: str) -> bool:
        return parameter not in self.dropped

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


def provider_of(endpoint: str | None) -> str:
    """"openai", "azure", "deepseek" or "other", from the endpoint's host (None: OpenAI)."""
    if not endpoint:
        return "openai"
    host = (urlsplit(endpoint if "//" in endpoint else f"//{endpoint}").hostname or "").lower()
    if host == "api.openai.com":
        return "openai"
    if host.endswith(".openai.azure.com") or host.endswith(".cognitiveservices.azure.com"):
        return "azure"
    if host == "deepseek.com" or host.endswith(".deepseek.com"):
        return "deepseek"
    return "other"


_SNAPSHOT_DATE = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def undated(model: str) -> str:
    """The name a dated snapshot is asked by: the API answers "gpt-4o-mini" with
    "gpt-4o-mini-2024-07-18"; prices configured and sizes learned follow the name asked."""
    return _SNAPSHOT_DATE.sub("", model)


def is_reasoning_model(model: str) -> bool:
    """OpenAI's reasoning families by name: o1, o3, o4-mini …, gpt-5, gpt-5-mini, gpt-5.1 …
    (not gpt-5-chat, which is a chat model). A provider prefix ("openai/gpt-5") is ignored."""
    name = model.lower().rsplit("/", 1)[-1]
    if _O_SERIES.match(name):
        return True
    return bool(_GPT5.match(name)) and "gpt-5-chat" not in name


def profile_for(model: str, endpoint: str | None = None) -> ModelProfile:
    """The documented profile of `model` served at `endpoint`."""
    provider = provider_of(endpoint)
    name = model.lower().rsplit("/", 1)[-1]
    if provider == "deepseek" or name.startswith("deepseek"):
        # JSON mode only; `max_tokens` is its cap; the reasoner ignores sampling parameters
        return ModelProfile(cap="max_tokens", output_mode="json_object",
                            sampling="reasoner" not in name)
    if is_reasoning_model(name):
        efforts = {"minimal", "low", "medium", "high"}
        gpt5 = _GPT5.match(name)
        if gpt5 is not None and gpt5.group(1) is not None:  # gpt-5.1 and later
            efforts = {"none", "low", "medium", "high"}
        return ModelProfile(reasoning=True, efforts=frozenset(efforts), sampling=False)
    if provider == "other":
        return ModelProfile(cap="max_tokens")
    return ModelProfile()


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
# what was learned


@dataclass(slots=True)
class Lesson:
    """What 400s taught about one model at one endpoint: parameters to leave out, the cap's
    name, the output mode to use instead."""

    dropped: set[str] = field(default_factory=set)
    cap: CapParameter | None = None
    output_mode: OutputMode | None = None

    def describe(self) -> list[str]:
        said = [f"{p} dropped" for p in sorted(self.dropped)]
        if self.cap is not None:
            said.append(f"output cap sent as {self.cap}")
        if self.output_mode is not None:
            said.append(f"{self.output_mode.replace('_', ' ')} output used")
        return said


class Learned:
    """Lessons per (endpoint, model), kept for the life of the process (one gateway's)."""

    def __init__(self) -> None:
        self._lessons: dict[tuple[str, str], Lesson] = {}

    def apply(self, profile: ModelProfile, *, endpoint: str, model: str) -> ModelProfile:
        lesson = self._lessons.get((endpoint, model))
        if lesson is None:
            return profile
        return replace(profile, dropped=profile.dropped | frozenset(lesson.dropped),
                       cap=lesson.cap or profile.cap,
                       output_mode=lesson.output_mode or profile.output_mode)

    def learn(self, parameter: str, profile: ModelProfile, *, endpoint: str,
              model: str) -> bool:
        """Take in that `parameter` was refused for a request built from `profile`; False when
        there is nothing left to change (the 400 stands)."""
        lesson = self._lessons.setdefault((endpoint, model), Lesson())
        if parameter == "response_format":
            lower = _next_mode(profile.output_mode)
            if lower is None:
                return False
            lesson.output_mode = lower
            said = f"{endpoint} refused {profile.output_mode} output for {model}; using {lower}"
        elif parameter in CAPS:
            if profile.cap != parameter or not profile.sends(parameter):
                return False
            if lesson.cap is None:
                lesson.cap = CAPS[1] if parameter == CAPS[0] else CAPS[0]
                said = f"{endpoint} refused {parameter} for {model}; sending {lesson.cap}"
            else:  # both names refused: the endpoint takes no cap at all
                lesson.dropped.update(CAPS)
                said = f"{endpoint} refused both output-cap parameters for {model}; none sent"
        else:
            if parameter in lesson.dropped or parameter in profile.dropped:
                return False
            lesson.dropped.add(parameter)
            said = f"{endpoint} refused {parameter} for {model}; leaving it out"
        log.warning("%s (learned once, kept for this process)", said)
        return True

    def lessons(self) -> dict[tuple[str, str], Lesson]:
        """Every lesson so far, by (endpoint, model), for `dialectic doctor`."""
        return {key: lesson for key, lesson in self._lessons.items() if lesson.describe()}


def _next_mode(mode: OutputMode) -> OutputMode | None:
    index = OUTPUT_MODES.index(mode)
    return OUTPUT_MODES[index + 1] if index + 1 < len(OUTPUT_MODES) else None
