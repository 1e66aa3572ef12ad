"""What a model costs, per million tokens, and where that figure came from.

Lookup order (`quote`): the operator's `[prices."MODEL"]` in dialectic.toml ("configured"), the
few prices no library can know (`BUILTIN_PRICES`: the offline rehearsal model is free, "builtin"),
the maintained genai-prices library ("library": it knows cached-input rates of OpenAI, DeepSeek,
Anthropic, Google, Azure and more, and resolves dated snapshot names), else the settings'
`default_price` ("default": a local model, a name nobody knows).

genai-prices is imported here and nowhere else, lazily: its import and data load cost about a
quarter of a second, which `dialectic --help` and a rehearsal must not pay. Each
(model, provider) is looked up once per process.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from engine.money import price_memo
from engine.provider.profiles import behind_prefix, kind_of, on_private_host, provider_of, undated

#: "local": a local server's model, which costs nothing unless a price is configured
PriceSource = Literal["configured", "builtin", "library", "default", "local"]
#: Tokens the library prices per rate read. Small on purpose: tiered prices (Gemini 2.5 Pro
#: doubles above 200k prompt tokens) must give the base tier a debate's calls pay.
SAMPLE_TOKENS = 1_000
PER_MILLION = Decimal(1_000_000)


class ModelPrice(BaseModel):
    """USD per million tokens; `cached_input` for prompt tokens read from the provider's cache
    (None: billed as `input`). Reasoning tokens are output tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)


class PriceQuote(NamedTuple):
    """A model's price and where it came from (for `dialectic doctor` and the estimate)."""

    model: str
    price: ModelPrice
    source: PriceSource
    provider: str | None = None   # the library's provider id, when the library priced it

    @property
    def known(self) -> bool:
        """False when the price is the settings' default, a guess for an unknown model."""
        return self.source != "default"


#: What the library cannot know. The rehearsal model runs offline and costs nothing.
FREE = ModelPrice(input=0.0, output=0.0)
BUILTIN_PRICES: dict[str, ModelPrice] = {"rehearsal": ModelPrice(input=0.0, output=0.0)}


class Provider(NamedTuple):
    """How to ask the library for an endpoint's prices: by provider id or by API URL."""

    provider_id: str | None = None
    api_url: str | None = None


def providers_for(base_url: str | None) -> tuple[Provider, ...]:
    """Where to look a model up for an endpoint (engine/provider/profiles.py tells which provider it
    is), most specific first; the model name alone (`Provider()`) last, so an unknown gateway
    serving well-known models still finds them."""
    provider = provider_of(base_url)
    if provider == "azure":
        return (Provider("azure"), Provider("openai"))
    if provider in ("openai", "deepseek"):
        return (Provider(provider), Provider())
    if on_private_host(base_url):
        # no provider the library prices serves a private address (its URL patterns are
        # public hosts'): matching would only compile ~50 patterns to miss them all (a few ms
        # of a run's start against a local gateway or the test suite's fake)
        return (Provider(),)
    return (Provider(api_url=base_url), Provider())


def quote(model: str, *, configured: Mapping[str, ModelPrice], base_url: str | None,
          default: ModelPrice, kind: str | None = None) -> PriceQuote:
    """`model`'s price behind the endpoint `base_url`: configured, builtin, library, default.
    A dated snapshot the API answers with ("gpt-4o-mini-2024-07-18") takes the price configured
    for the name it was asked by ("gpt-4o-mini"); a gateway's prefixed id ("openai/gpt-4o-mini")
    the price of the model behind it; a local server's model (`kind` "local", or read from the
    endpoint) costs nothing unless configured."""
    if model in configured:
        return PriceQuote(model, configured[model], "configured")
    asked = undated(model)
    if asked != model and asked in configured:
        return PriceQuote(model, configured[asked], "configured")
    if model in BUILTIN_PRICES:
        return PriceQuote(model, BUILTIN_PRICES[model], "builtin")
    if kind_of(model, base_url, kind) == "local":
        return PriceQuote(model, FREE, "local")
    for name in lookup_names(model):
        for provider in providers_for(base_url):
            found = library_price(name, provider)
            if found is not None:
                return PriceQuote(model, found[1], "library", found[0])
    return PriceQuote(model, default, "default")


def lookup_names(model: str) -> tuple[str, ...]:
    """The names to ask the library for: the model as named, then, for a gateway's prefixed
    id, the model behind the prefix ("anthropic/claude-sonnet-4.5" -> "claude-sonnet-4.5")."""
    behind = behind_prefix(model)
    return (model,) if behind == model else (model, behind)


@functools.cache
def library_price(model: str, provider: Provider) -> tuple[str, ModelPrice] | None:
    """The library's provider id and rates for `model`, or None when it does not know them:
    today's answer kept in a file (engine/money/price_memo.py), else the library's."""
    key = json.dumps([model, provider.provider_id, provider.api_url])
    known, kept = price_memo.recall(key)
    if known and kept is None:
        return None
    if kept is not None:
        with contextlib.suppress(ValueError):   # a file edited by hand: ask the library
            return kept[0], ModelPrice(input=kept[1], cached_input=kept[2], output=kept[3])
    found = _library_price(model, provider)
    price_memo.remember(key, None if found is None else (
        found[0], found[1].input, found[1].cached_input, found[1].output))
    return found


def _library_price(model: str, provider: Provider) -> tuple[str, ModelPrice] | None:
    import genai_prices  # lazy: ~0.25 s of import and data load, paid on first need only

    def calc(at: datetime, **tokens: int) -> genai_prices.types.PriceCalculation:
        usage = genai_prices.Usage(**tokens)
        if provider.api_url:
            return genai_prices.calc_price(usage, model, provider_api_url=provider.api_url,
                                           genai_request_timestamp=at)
        return genai_prices.calc_price(usage, model, provider_id=provider.provider_id,
                                       genai_request_timestamp=at)

    n = SAMPLE_TOKENS
    today = datetime.now(UTC).replace(minute=45, second=0, microsecond=0)
    try:
        # time-of-day prices (DeepSeek's off-peak): the dearest of six hours; a model the library
        # prices the same all day needs one (each hour is four calculations)
        hours = range(0, 24, 4) if _priced_by_time(model, provider) else (0,)
        samples = []
        for hour in hours:
            at = today.replace(hour=hour)
            base = calc(at)   # a per-request fee, where a provider has one, is no per-token rate
            samples.append([float((calc(at, **tokens).total_price - base.total_price)
                                  * PER_MILLION / n)
                            for tokens in ({"input_tokens": n},
                                           {"input_tokens": n, "cache_read_tokens": n},
                                           {"output_tokens": n})])
    except LookupError:   # the library's "unable to find provider / model"
        return None
    rates = [max(column) for column in zip(*samples, strict=True)]
    return base.provider.id, ModelPrice(input=rates[0], cached_input=rates[1], output=rates[2])


def _priced_by_time(model: str, provider: Provider) -> bool:
    """Whether the library's price for `model` depends on when it is called (conditional prices:
    a time of day, a start date); LookupError when it does not know the model."""
    from genai_prices import data_snapshot, types

    _, info = data_snapshot.get_snapshot().find_provider_model(
        model, None, provider.provider_id, provider.api_url)
    return not isinstance(info.prices, types.ModelPrice)
