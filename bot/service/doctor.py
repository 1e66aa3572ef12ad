"""`dialectic doctor`: one tiny call per configured model, before the first debate, to say
whether the endpoint is reachable, accepts the key, knows the model, which provider serves it and
how it is asked for JSON, which parameters it refused (what its 400s taught, kept in the database
when there is one, and forgotten on request), its context window and the modes too big for it,
and whether the model's price is known. Rules live here, so every surface that offers the check
reports the same."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from engine.core.debate import prepare
from engine.core.presets import all_presets, judges_for
from engine.domain import DebateRequest
from engine.errors import (
    InvalidRequest,
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMRefused,
    LLMTruncated,
    LLMUnreachable,
)
from engine.money.answering import STAND_IN
from engine.money.step_models import plan_models
from engine.money.windows import plan_need
from engine.ports import LessonBook
from engine.provider.lessons import Learned
from engine.provider.llm import CallSpec, Prompt
from engine.provider.profiles import undated
from engine.provider.routing import ProviderRouter
from engine.settings import EngineSettings
from engine.vocabulary import Mode

#: a reasoning model thinks even about "ok": room for that, and still a cent or less
PROBE_CAP = 1024


class Probe(BaseModel):
    """The tiny reply asked of each model."""

    ok: bool = Field(description="true")


@dataclass(slots=True)
class ModelCheck:
    """One model's line: whether it answered, and what the endpoint taught about it."""

    model: str
    ok: bool
    problem: str = ""                # one line with the fix, when not ok
    mode: str = ""                   # the structured-output mode that worked
    adapted: list[str] = field(default_factory=list)   # parameters dropped or renamed
    price: str = ""                  # where the price comes from, and the figures
    latency_s: float = 0.0
    answered_as: str = ""            # the model name the endpoint answered with
    provider: str = ""               # the provider kind that serves it (its profile's)
    window: str = ""                 # its context window, and the modes too big for it
    stand_in: bool = False           # priced pessimistically: never answered, price unknown
    route: str = ""                  # the named provider it goes to ("": the default endpoint)
    endpoint: str = ""               # where it was asked (no credentials)


@dataclass(slots=True)
class ProviderCheck:
    """One provider's line: where it is, and how its models fared."""

    name: str                        # "" for the default endpoint (OPENAI_BASE_URL)
    endpoint: str
    kind: str
    models: list[ModelCheck] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        return any(m.ok or "could not reach" not in m.problem for m in self.models)

    @property
    def answered(self) -> int:
        return sum(1 for m in self.models if m.ok)

    @property
    def modes(self) -> list[str]:
        return sorted({m.mode for m in self.models if m.ok})

    @property
    def unpriced(self) -> list[str]:
        return [m.model for m in self.models if m.stand_in or "price unknown" in m.price]


def models_in_use(settings: EngineSettings) -> list[str]:
    """Every model a debate may call with these settings: the default, each role's, and each
    judge's across the presets."""
    found = {settings.default_model, *settings.models.values()}
    for preset in all_presets(settings).values():
        found.update(j.model for j in judges_for(settings, preset, None) if j.model)
    found.update(j.model for j in settings.judges if j.model)
    return sorted(found)


async def check(settings: EngineSettings, *, lessons: LessonBook | None = None
                ) -> list[ModelCheck]:
    """One probe per configured model, side by side, each at the provider its name routes to
    (`lessons`: what earlier processes were taught, read first)."""
    quick = settings.model_copy(update={"max_retries": 1})
    router = ProviderRouter(quick, lessons=lessons)
    try:
        return list(await asyncio.gather(*(
            _probe(settings, router, model) for model in models_in_use(settings))))
    finally:
        await router.aclose()


async def _probe(settings: EngineSettings, router: ProviderRouter, model: str) -> ModelCheck:
    """The parameters a debate sends (its temperature, its reasoning effort, an output cap,
    the structured-output mode), so what the endpoint refuses is found now, not mid-debate."""
    provider, bare = settings.route(model)
    here = settings.for_provider(provider)   # the provider's endpoint, prices and windows
    gateway = router.gateway(provider)
    spec = CallSpec(model=bare, schema=Probe, role="doctor", step="doctor",
                    prompt=Prompt(system="You check that an API works. Reply in JSON.",
                                  user='Reply with {"ok": true}.'),
                    timeout=settings.call_timeout, max_output_tokens=PROBE_CAP,
                    temperature=settings.temperature,
                    reasoning_effort=settings.effort_for("doctor"))
    started = time.monotonic()
    result = ModelCheck(model=model, ok=False, price=price_note(here, bare),
                        route=provider or "", endpoint=here.endpoint())
    try:
        reply = await gateway.complete(spec)
    except LLMError as exc:
        result.problem = problem(exc, here, bare, _where(settings, provider))
    else:
        answered = settings.route(reply.model)[1]
        result.ok, result.answered_as = True, reply.model
        here.answers.learn(here.endpoint_key, bare, answered)  # priced as it
        result.price = price_note(here, bare)
    result.stand_in = here.priced_model(bare) == STAND_IN != bare
    result.latency_s = round(time.monotonic() - started, 2)
    profile = gateway.profile(bare)
    result.mode, result.provider = profile.output_mode, profile.kind
    lesson = gateway.learned.lessons().get((gateway.endpoint, bare))
    result.adapted = [said for said in (lesson.describe() if lesson is not None else [])
                      if not said.startswith("context window")]
    result.window = window_note(settings, model, await gateway.window(bare))
    return result


def _where(settings: EngineSettings, provider: str | None) -> tuple[str, str]:
    """The settings a provider's URL and key come from, for the fix a problem names."""
    if provider is None:
        return "OPENAI_BASE_URL", "OPENAI_API_KEY"
    named = settings.providers[provider].api_key_env
    return f"providers.{provider}.base_url", named or f"providers.{provider}.api_key_env"


def by_provider(settings: EngineSettings, results: list[ModelCheck]) -> list[ProviderCheck]:
    """One summary per provider the models go to (the default endpoint first, when used)."""
    found: dict[str, ProviderCheck] = {}
    for result in results:
        summary = found.setdefault(result.route, ProviderCheck(
            name=result.route, endpoint=result.endpoint, kind=result.provider))
        summary.models.append(result)
    return [found[name] for name in sorted(found)]


async def forget(settings: EngineSettings, lessons: LessonBook | None) -> int:
    """Forget what the endpoints' 400s taught (here and in the database); how many models had a
    lesson."""
    book = Learned(lessons)
    return sum([await book.forget(settings.for_provider(p).endpoint())
                for p in (None, *sorted(settings.providers))])


def window_note(settings: EngineSettings, model: str, window: int | None) -> str:
    """"context window 4,096 tokens (too small for structured, consensus …)", or "" unknown."""
    if window is None:
        return ""
    too_big = [mode.value for mode in Mode if _need(settings, model, mode) > window]
    said = f"context window {window:,} tokens"
    return f"{said} (too small for {', '.join(too_big)})" if too_big else said


def _need(settings: EngineSettings, model: str, mode: Mode) -> int:
    """The most context `model`'s calls in a default debate of `mode` need (0: none)."""
    free = settings.model_copy(update={"context_windows": {}})
    try:
        prepared = prepare(free, DebateRequest(topic="A proposition to check the window",
                                               mode=mode))
    except InvalidRequest:
        return 0
    models = plan_models(free, prepared.request.options, prepared.plan)
    return plan_need(prepared.plan, models, model)


def price_note(settings: EngineSettings, model: str) -> str:
    """"price known: $0.25 in / $2 out per million tokens (genai-prices)", prefixed with the
    model that answers when another does; for a name that never answered and that no catalogue
    knows, that it is priced pessimistically (engine/money/answering.py), and how to set one."""
    priced = settings.priced_model(model)
    if priced == STAND_IN != model:
        return (f"price unknown and never answered here: priced as {STAND_IN} (pessimistic, "
                f"with its reasoning allowance) until it answers; or set [prices.\"{model}\"] "
                "in dialectic.toml")
    found = settings.price_quote(priced)
    rate = found.price
    cached = f" (${rate.cached_input:g} cached)" if rate.cached_input is not None else ""
    figures = f"${rate.input:g} in{cached} / ${rate.output:g} out per million tokens"
    if found.source == "local":
        return (f"no price: a local server's model costs nothing here; set "
                f"[prices.\"{model}\"] in dialectic.toml to count it")
    answers = (f"priced as {priced}, which answers for it: "
               if undated(priced) != undated(model) else "")
    if found.known:
        source = "dialectic.toml" if found.source == "configured" else "genai-prices"
        return f"{answers}price known: {figures} ({source})"
    return (f"{answers}price unknown: the default ({figures}) is used; set "
            f"[prices.\"{priced}\"] in dialectic.toml")


def problem(exc: LLMError, settings: EngineSettings, model: str,
            where: tuple[str, str] = ("OPENAI_BASE_URL", "OPENAI_API_KEY")) -> str:
    """What went wrong, in one line, with what to do about it (`settings`: the provider's;
    `where`: the settings its URL and key come from, named in the fix)."""
    endpoint = settings.endpoint()
    url, key = where
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, LLMUnreachable):
        cause = cause.__cause__  # retries spent on an endpoint that never answered
    if isinstance(cause, LLMUnreachable):
        return f"could not reach {endpoint}: {cause.reason}; check {url}"
    if isinstance(exc, LLMAuthError):
        return (f"{endpoint} refused the key (HTTP {exc.status}): set {key} to a key "
                f"for this endpoint")
    if isinstance(exc, LLMBadRequest) and exc.status == 404 and "does not know" in str(exc):
        return (f"{endpoint} does not know the model {model!r} (HTTP 404): check the name "
                f"(DIALECTIC_DEFAULT_MODEL, models in dialectic.toml) or {url}")
    if isinstance(exc, LLMRefused):
        return f"{model} refused even the check ({exc.refusal}); try another model"
    if isinstance(exc, LLMTruncated):
        return f"{model} could not answer within {PROBE_CAP} tokens: {exc}"
    return _one_line(str(exc))


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]
