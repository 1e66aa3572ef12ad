"""The engine's settings: the LLM provider, models and prices, time limits and retries, judges and
presets. A frozen pydantic model handed down to everything that runs a debate.

The engine reads no environment: the top of the process (bot/settings.py) loads every layer's
settings from the environment and `dialectic.toml` and hands the engine this part. Each field's
environment variable is `DIALECTIC_<FIELD>` unless it names its own (the provider's usual
`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from engine.money.answering import STAND_IN, AnsweringModels, endpoint_key, priced_model
from engine.money.prices import ModelPrice as ModelPrice  # re-exported: a settings table's type
from engine.money.prices import PriceQuote, quote
from engine.provider.families import FAMILY_NAME, UNKNOWN, family_of
from engine.provider.naming import NAME_PATTERN, qualified, split_model, unknown_prefix
from engine.provider.profiles import OutputMode, ProviderKind, ReasoningEffort
from engine.provider.redaction import public_url, url_secrets
from engine.provider.urls import http_url
from engine.vocabulary import MAX_JUDGES, MAX_ROUNDS, MAX_TOPIC_CHARS, Mode

#: Bounds of numbers a settings file gives a judge or a preset (finite, as every setting is).
MAX_JUDGE_WEIGHT = 100.0
MAX_SPREAD = 10.0   # rubric points: a spread is at most the scale's width


class JudgeSpec(BaseModel):
    """One judge of a panel: its expertise (the lens it scores through), model and vote weight."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    expertise: str
    model: str | None = None
    weight: float = Field(default=1.0, gt=0, le=MAX_JUDGE_WEIGHT)


class ThresholdSpec(BaseModel):
    """A preset's alpha cut-offs, the one definition routing reads (engine/reading/verdicts.py);
    ``escalate <= tentative <= high`` is enforced.

    * ``alpha >= high`` -> band "high", routing "auto_approve"
    * ``tentative <= alpha < high`` -> "tentative" / "tentative"
    * ``escalate <= alpha < tentative`` -> "review" / "human_review"
    * ``alpha < escalate`` -> "contentious" / "escalate"
    * ``irreconcilable_spread``: with a split on the winner, an item spread this wide (or wider)
      makes the panel irreconcilable (see ``verdicts.divergence``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    high: float = Field(default=0.80, ge=0.0, le=1.0)   # 1: only a unanimous panel publishes
    tentative: float = Field(default=0.67, ge=0.0, le=1.0)
    escalate: float = Field(default=0.50, ge=0.0, le=1.0)
    irreconcilable_spread: float = Field(default=3.0, gt=0, le=MAX_SPREAD)

    @field_validator("high", "tentative", "escalate", mode="before")
    @classmethod
    def _cutoff(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool) and not (
                0.0 <= value <= 1.0):   # NaN and the infinities fail this too
            raise ValueError(f"an alpha cut-off is a number from 0 to 1 (defaults: high 0.8, "
                             f"tentative 0.67, escalate 0.5), not {value}")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdSpec:
        if not self.escalate <= self.tentative <= self.high:
            raise ValueError(f"thresholds must satisfy 0 <= escalate <= tentative <= high <= 1, "
                             f"got escalate {self.escalate:g}, tentative {self.tentative:g}, "
                             f"high {self.high:g}")
        return self


class PresetSpec(BaseModel):
    """A named combination of mode, personas, judges, rounds and routing thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    name: str = ""                 # a `[presets.NAME]` table takes its name from NAME
    description: str = ""
    mode: Mode = Mode.CONSENSUS
    rounds: int = Field(default=1, ge=0, le=MAX_ROUNDS)
    pro_persona: str = "an advocate arguing FOR the proposition"
    con_persona: str = "an advocate arguing AGAINST the proposition"
    judges: tuple[JudgeSpec, ...] = ()
    thresholds: ThresholdSpec = ThresholdSpec()
    allow_downgrade: bool = True
    policy: str = ""
    perspectives: tuple[str, ...] = ()
    temperature: float | None = Field(default=None, ge=0, le=2)
    # Opt-in: judges' vote weights moved by their measured agreement with the reviewers
    # (engine/oversight/judge_weights.py, bounded so no judge dominates); the weights used are
    # recorded.
    evidence_weights: bool = False
    # alpha below the escalate cut-off flags "needs human discussion" with the core divergence
    # points; `brief`: the result carries a one-page brief (engine/reading/discussion.py)
    discussion: bool = False
    brief: bool = False

    @model_validator(mode="after")
    def _panel_size(self) -> PresetSpec:
        if self.judges and len(self.judges) > MAX_JUDGES:
            raise ValueError(f"a preset has at most {MAX_JUDGES} judges")
        if self.mode is Mode.CONSENSUS and len(self.judges) == 1:
            raise ValueError("a consensus preset needs at least two judges (agreement needs a "
                             "panel); list two or more, or none for the default panel")
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError("judge names must be unique within a preset")
        return self


DEFAULT_JUDGES: tuple[JudgeSpec, ...] = (
    JudgeSpec(name="technical",
              expertise="technical feasibility, engineering soundness and evidence"),
    JudgeSpec(name="business", expertise="business value, cost, market and organisational impact"),
    JudgeSpec(name="risk", expertise="risk, compliance, security and what could go wrong"),
    JudgeSpec(name="general", expertise="overall reasoning quality, fairness and clarity"),
)


#: reasoning models think at "low" effort unless told otherwise: a debate's arguments are not
#: olympiad problems, and the hidden tokens are billed as output
DEFAULT_EFFORT: ReasoningEffort = "low"


class ProviderSpec(BaseModel):
    """One named provider (`[providers.NAME]`): where its models are asked, with which key
    (read from the environment variable `api_key_env` names, never written in the file), and
    what is its own: profile kind, output mode, prices and context windows by bare model name,
    read timeout, and how many calls it takes at once. Models go to it written `NAME:model`."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    base_url: str | None = None        # None: OpenAI's own API
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    api_key: SecretStr | None = None   # filled from `api_key_env` where settings are loaded
    kind: ProviderKind | None = None   # None: read from the host, as DIALECTIC_PROVIDER_KIND
    output_mode: OutputMode | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    context_windows: dict[str, PositiveInt] = Field(default_factory=dict)
    read_timeout: float | None = Field(default=None, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1, le=1000)

    @field_validator("base_url")
    @classmethod
    def _an_http_url(cls, value: str | None) -> str | None:
        return http_url(value)

    @model_validator(mode="after")
    def _reachable(self) -> ProviderSpec:
        if self.base_url is None and self.api_key_env is None:
            raise ValueError("a provider needs base_url (where its API is) or api_key_env (the "
                             "variable holding its key), or both")
        return self


class EngineSettings(BaseModel):
    """Every knob of a debate run. Frozen: build it once, pass it down."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              allow_inf_nan=False)

    # --- LLM provider (the openai SDK's own variable names) ---
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key"))
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url"))
    rehearsal: bool = False  # DIALECTIC_REHEARSAL=1 forces the offline model even with a key
    # None: each model's profile decides (engine/provider/profiles.py); set it to force a mode for a
    # provider whose refusal of the richer one is not a 400 the gateway can learn from
    output_mode: OutputMode | None = None
    # None: read from the endpoint's host (engine/provider/profiles.py `kind_of`); set it for a
    # provider behind an address that does not say ("local" for a vLLM server on a LAN name,
    # "gateway" for a LiteLLM proxy, "anthropic", "gemini", ...)
    provider_kind: ProviderKind | None = None
    # model -> context window in tokens, for servers that do not say it (output caps fit in it)
    context_windows: dict[str, PositiveInt] = Field(default_factory=dict)
    default_model: str = Field(default="gpt-5-mini", min_length=1)  # docs/providers.md says why
    models: dict[str, str] = Field(default_factory=dict)  # role -> model (pro, con, judge, ...)
    # model -> price, overriding the genai-prices library's (engine/money/prices.py); a model
    # neither configured nor known to the library is priced at `default_price`
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    default_price: ModelPrice = ModelPrice(input=2.50, output=10.00)
    temperature: float | None = Field(default=0.7, ge=0, le=2)  # models that take one
    # reasoning models' effort: for every role, and per role or family (as `models`); models
    # that do not reason are sent none. None: the model's own default.
    reasoning_effort: ReasoningEffort | None = DEFAULT_EFFORT
    reasoning_efforts: dict[str, ReasoningEffort] = Field(default_factory=dict)
    # model name -> its family, for names that do not say (an Azure deployment, an alias):
    # `[families] prod-reasoner = "openai"` (engine/provider/families.py reads the rest)
    families: dict[str, str] = Field(default_factory=dict)

    # named providers beside the endpoint above: `[providers.NAME]`, models `NAME:model`
    providers: dict[str, ProviderSpec] = Field(default_factory=dict)

    # --- time and retries ---
    call_timeout: float = Field(default=60.0, gt=0)
    # the longest silence while a reply is read, before its first byte too (a reply that is
    # not streamed sends nothing until it is whole): a stalled body is cut then and retried
    # once within the step. None: the call timeout.
    read_timeout: float | None = Field(default=None, gt=0)
    phase_timeout: float = Field(default=120.0, gt=0)
    debate_timeout: float = Field(default=300.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10)
    backoff_base: float = Field(default=1.0, ge=0)
    backoff_cap: float = Field(default=8.0, ge=0)
    invalid_output_retries: int = Field(default=2, ge=0, le=5)
    # an overloaded provider (503, 529, 429) is waited out past `max_retries`, up to this many
    # seconds of waiting in all (within the call's step: a burst of 503s is not a failure)
    overload_wait: float = Field(default=45.0, ge=0)
    # an unreachable endpoint (refused, unknown host): this many failures in a row open the
    # circuit, and calls then fail at once for `circuit_cooldown` seconds
    # (engine/provider/circuit.py)
    circuit_failures: int = Field(default=3, ge=1, le=100)
    circuit_cooldown: float = Field(default=15.0, ge=0)

    # --- debates ---
    judges: tuple[JudgeSpec, ...] = Field(default=DEFAULT_JUDGES, min_length=2,
                                          max_length=MAX_JUDGES)
    presets: dict[str, PresetSpec] = Field(default_factory=dict)
    default_rounds: int = Field(default=1, ge=0, le=MAX_ROUNDS)
    max_topic_chars: int = Field(default=MAX_TOPIC_CHARS, ge=10, le=100_000)

    # which model answers for each name asked at the endpoint, as learned (engine/money/
    # answering.py): not a setting, a book shared by every copy of these settings
    _answers: AnsweringModels = PrivateAttr(default_factory=AnsweringModels)
    # memos (`_memo`): price quotes, and `priced_model` for one version of the book of answers
    _quotes: tuple[int, int, dict[str, PriceQuote]] = PrivateAttr(default=(0, 0, {}))
    _priced: tuple[int, int, dict[str, str]] = PrivateAttr(default=(0, 0, {}))

    @field_validator("openai_base_url")
    @classmethod
    def _an_http_url(cls, value: str | None) -> str | None:
        return http_url(value)

    @field_validator("providers")
    @classmethod
    def _provider_names(cls, providers: dict[str, ProviderSpec]) -> dict[str, ProviderSpec]:
        for name in providers:
            if not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"provider name {name!r}: use lower-case letters, digits, - "
                                 "and _ (it prefixes model names: NAME:model)")
        return providers

    @model_validator(mode="after")
    def _models_name_known_providers(self) -> EngineSettings:
        """Every model named in the settings goes to a provider that is configured: a prefix
        nobody configured, or a bare name with no default endpoint, is refused at load."""
        asked = self.configured_models(priced=False)
        for model in sorted(asked | set(self.prices) | set(self.context_windows)):
            # a price or window for a bare name needs no default endpoint, only a known prefix
            said = (self.model_problem(model) if model in asked
                    else unknown_prefix(model, self.providers))
            if said is not None:
                raise ValueError(said)
        return self

    def model_problem(self, model: str) -> str | None:
        """Why `model` cannot be asked here, in one line: a provider prefix nobody configured,
        or a bare name while only named providers are set (no default endpoint); else None."""
        said = unknown_prefix(model, self.providers)
        if said is not None or self.is_rehearsal or self.has_default_endpoint:
            return said
        if self.route(model)[0] is None:
            return (f"model {model!r} goes to the default endpoint, but neither OPENAI_API_KEY "
                    f"nor OPENAI_BASE_URL is set: name its provider "
                    f"({', '.join(f'{p}:' for p in sorted(self.providers))}) or set the "
                    "default endpoint")
        return None

    @field_validator("families")
    @classmethod
    def _family_names(cls, families: dict[str, str]) -> dict[str, str]:
        for model, family in families.items():
            if not FAMILY_NAME.match(family):
                raise ValueError(f"families.{model}: {family!r} is no family name (lower case, "
                                 f"e.g. openai, anthropic, google, meta, mistral, qwen)")
        return families

    @field_validator("presets")
    @classmethod
    def _named_presets(cls, presets: dict[str, PresetSpec]) -> dict[str, PresetSpec]:
        """`[presets.arch-review]` names its preset by the table key; a `name` inside agrees."""
        for key, preset in presets.items():
            if preset.name and preset.name != key:
                raise ValueError(f"presets.{key}: name {preset.name!r} differs from its key")
        return {key: preset.model_copy(update={"name": key}) for key, preset in presets.items()}

    @property
    def is_rehearsal(self) -> bool:
        """True when debates run on the offline rehearsal model (no key, no endpoint, or forced)."""
        return self.rehearsal or (not self.has_default_endpoint and not self.providers)

    @property
    def has_default_endpoint(self) -> bool:
        """Whether bare model names have somewhere to go (OPENAI_API_KEY or OPENAI_BASE_URL)."""
        return self.openai_api_key is not None or self.openai_base_url is not None

    def secrets(self) -> tuple[str, ...]:
        key = (self.openai_api_key.get_secret_value(),) if self.openai_api_key else ()
        named = tuple(s for p in self.providers.values()
                      for s in ((p.api_key.get_secret_value(),) if p.api_key else ())
                      + url_secrets(p.base_url))
        return key + url_secrets(self.openai_base_url) + named

    # --- named providers ---

    def route(self, model: str) -> tuple[str | None, str]:
        """(provider, bare model) for a model name (engine/provider/naming.py's rule)."""
        return split_model(model, self.providers)

    def for_provider(self, name: str | None) -> EngineSettings:
        """These settings as the provider `name` sees them (None: the default endpoint): its
        URL, key, kind, output mode, read timeout, and its prices and windows by bare name
        (a `[prices."NAME:model"]` at the top counts too). Shares the book of answers."""
        if name is None:
            return self
        spec = self.providers[name]
        mine = f"{name}:"
        update: dict[str, object] = {
            "openai_base_url": spec.base_url, "openai_api_key": spec.api_key or SecretStr(""),
            "provider_kind": spec.kind, "providers": {},
            "output_mode": spec.output_mode or self.output_mode,
            "read_timeout": spec.read_timeout or self.read_timeout,
            "prices": {**{k.removeprefix(mine): v for k, v in self.prices.items()
                          if k.startswith(mine)}, **spec.prices},
            "context_windows": {**{k.removeprefix(mine): v
                                   for k, v in self.context_windows.items()
                                   if k.startswith(mine)}, **spec.context_windows}}
        return self.model_copy(update=update)

    def windows(self) -> dict[str, int]:
        """Every configured context window by the name a step asks for (`NAME:model` for a
        named provider's)."""
        return {**self.context_windows, **{qualified(name, model): window
                                           for name, spec in self.providers.items()
                                           for model, window in spec.context_windows.items()}}

    def model_for(self, role: str) -> str:
        """The model a role uses: `models[role]`, then `models[<role family>]`, then the default."""
        if self.is_rehearsal:
            return "rehearsal"
        if role in self.models:
            return self.models[role]
        family = role.split("/", 1)[0]
        return self.models.get(family, self.default_model)

    def family_of(self, model: str | None) -> str:
        """The family of `model` as asked or as it answered: a `[families]` override, else the
        family of the model the endpoint was seen answering as for this name (an Azure
        deployment), else the name's own (engine/provider/families.py)."""
        if not model or model == "rehearsal":
            return UNKNOWN
        found = family_of(model, self.families)
        if found != UNKNOWN:
            return found
        answered = self.answers.answering(self.endpoint_key, model)
        return family_of(answered, self.families) if answered else UNKNOWN

    def effort_for(self, role: str) -> ReasoningEffort | None:
        """The reasoning effort a role asks for: by role, by family, then for every role (None:
        the model's own default)."""
        efforts = self.reasoning_efforts
        return efforts.get(role) or efforts.get(role.split("/", 1)[0]) or self.reasoning_effort

    def configured_models(self, *, priced: bool = True) -> set[str]:
        """The models the operator named: the default, per role, per judge, and (`priced`)
        the priced ones."""
        judges = [j for p in self.presets.values() for j in p.judges] + list(self.judges)
        return ({self.default_model, *self.models.values(), *(self.prices if priced else ())}
                | {j.model for j in judges if j.model})

    def price_for(self, model: str) -> ModelPrice:
        """What `model` costs per million tokens (see `price_quote` for where it came from)."""
        return self.price_quote(model).price

    def price_quote(self, model: str) -> PriceQuote:
        """`model`'s price at this endpoint and its source: configured in `prices`, builtin,
        the genai-prices library, or `default_price` for a model nobody knows. A `NAME:model`
        is priced by its provider (its prices, its host for the library)."""
        quotes: dict[str, PriceQuote] = self._memo("_quotes", 0)
        if model not in quotes:
            quotes[model] = self._quote(model)
        return quotes[model]

    def _quote(self, model: str) -> PriceQuote:
        provider, bare = self.route(model)
        if provider is not None and model not in self.prices:
            return self.for_provider(provider).price_quote(bare)
        return quote(model, configured=self.prices, base_url=self.openai_base_url,
                     default=self.default_price, kind=self.provider_kind)

    @property
    def answers(self) -> AnsweringModels:
        """The models that answered for names asked here (learned; the service stores them)."""
        return self.__pydantic_private__["_answers"]  # type: ignore[index,no-any-return]

    def _memo(self, slot: str, version: int) -> dict[str, Any]:
        """These settings' memo `slot` (a copy starts its own), emptied when `version` moves;
        read without pydantic's `__getattr__` (it raises AttributeError to find a private one)."""
        private: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        owner, seen, memo = private[slot]
        if owner != id(self) or seen != version:
            memo = {}
            private[slot] = (id(self), version, memo)
        return memo  # type: ignore[no-any-return]

    @property
    def endpoint_key(self) -> str:
        """The endpoint as the book of answering models names it (no credentials)."""
        return endpoint_key(self.openai_base_url)

    def priced_model(self, model: str) -> str:
        """The model a call asking for `model` is priced as in holds, predictions and estimates:
        the one that answered for it here, else the name when the catalogue knows it, else the
        pessimistic stand-in (engine/money/answering.py)."""
        priced: dict[str, str] = self._memo("_priced", self.answers.version)
        if model not in priced:
            priced[model] = self._priced_model(model)
        return priced[model]

    def _priced_model(self, model: str) -> str:
        if self.is_rehearsal or model == "rehearsal":
            return "rehearsal"
        provider, bare = self.route(model)
        if provider is not None:
            found = self.for_provider(provider).priced_model(bare)
            return found if found == STAND_IN else qualified(provider, found)
        return priced_model(model, endpoint=self.endpoint_key, book=self.answers,
                            catalogued=lambda name: self.price_quote(name).known)

    def endpoint(self) -> str:
        """Where LLM calls go, for messages; never includes a key or a URL's credentials."""
        if self.is_rehearsal:
            return "the offline rehearsal model"
        return public_url(self.openai_base_url or "https://api.openai.com/v1")
