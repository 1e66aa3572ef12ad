"""The recorded cost is the provider's bill: rates from dialectic.toml, else the genai-prices
library (the real one, its bundled data), else the default; cached prompt tokens at their rate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import load_settings
from engine.domain import StepRecord, Usage
from engine.money.cost import breakdown, price, token_summary
from engine.money.prices import ModelPrice, Provider, providers_for, quote
from engine.settings import EngineSettings

DEFAULT = ModelPrice(input=2.5, output=10.0)
OPENAI = "https://api.openai.com/v1"
DEEPSEEK = "https://api.deepseek.com/v1"


@pytest.mark.parametrize(("usage", "rate", "usd"), [
    (Usage(prompt_tokens=1_000_000), ModelPrice(input=1, output=4), 1.0),
    (Usage(completion_tokens=1_000_000), ModelPrice(input=1, output=4), 4.0),
    # cached tokens are part of the prompt, at the cached rate
    (Usage(prompt_tokens=1_000_000, cached_tokens=400_000),
     ModelPrice(input=1, output=4, cached_input=0.1), 0.6 + 0.04),
    # no cached rate: a cached token costs what any prompt token costs
    (Usage(prompt_tokens=1_000_000, cached_tokens=400_000), ModelPrice(input=1, output=4), 1.0),
    # reasoning tokens are inside the completion: billed once, as output
    (Usage(completion_tokens=1_000, reasoning_tokens=800), ModelPrice(input=1, output=4), 0.004),
    (Usage(prompt_tokens=12_000, completion_tokens=400, cached_tokens=3_072, reasoning_tokens=256),
     ModelPrice(input=0.25, output=2.0, cached_input=0.025),
     (8_928 * 0.25 + 3_072 * 0.025 + 400 * 2.0) / 1e6),
    # a provider that reports more cached than prompt tokens bills no negative prompt
    (Usage(prompt_tokens=10, cached_tokens=50), ModelPrice(input=1, output=1, cached_input=0.5),
     5 / 1e6),
    (Usage(), ModelPrice(input=1, output=4, cached_input=0.1), 0.0),
])
def test_price_bills_cached_prompt_tokens_at_their_rate(usage: Usage, rate: ModelPrice,
                                                         usd: float) -> None:
    assert price(usage, rate) == pytest.approx(usd, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("base_url", "first"), [
    (None, Provider("openai")), (OPENAI, Provider("openai")),
    (DEEPSEEK, Provider("deepseek")),
    ("https://acme.openai.azure.com/openai/deployments/x", Provider("azure")),
    ("https://llm.example.com/v1", Provider(api_url="https://llm.example.com/v1")),
    ("http://localhost:11434/v1", Provider()), ("http://127.0.0.1:4000/v1", Provider()),
    ("https://10.1.2.3/v1", Provider()),
])
def test_the_endpoint_names_the_provider(base_url: str | None, first: Provider) -> None:
    assert providers_for(base_url)[0] == first


@pytest.mark.parametrize("base_url", ["http://localhost:11434/v1", "http://127.0.0.1:4000/v1",
                                      "https://10.1.2.3/v1", "http://[::1]:8000/v1",
                                      "http://gpu-box.local:8080/v1"])
def test_no_provider_the_library_knows_serves_a_private_address(base_url: str) -> None:
    """Why a private endpoint is not looked up by URL (providers_for): none of the library's
    URL patterns matches one, so the lookup could only miss."""
    from genai_prices import data_snapshot

    patterns = [p.api_pattern for p in data_snapshot.get_snapshot().providers]
    assert patterns and not [p for p in patterns if re.match(p, base_url)]


@pytest.mark.parametrize(("model", "base_url", "provider", "rates"), [
    ("gpt-5-mini", None, "openai", (0.25, 0.025, 2.0)),
    ("gpt-4o-mini", OPENAI, "openai", (0.15, 0.075, 0.60)),
    ("gpt-4o-mini-2024-07-18", None, "openai", (0.15, 0.075, 0.60)),   # a dated snapshot
    ("o4-mini", None, "openai", (1.10, 0.275, 4.40)),
    ("gpt-4.1-nano", None, "openai", (0.10, 0.025, 0.40)),
    ("deepseek-chat", DEEPSEEK, "deepseek", (0.27, 0.07, 1.10)),
    ("gpt-4o-mini", "https://acme.openai.azure.com/openai", "azure", (0.15, 0.075, 0.60)),
])
def test_the_library_prices_known_models_with_their_cached_rate(
        model: str, base_url: str | None, provider: str,
        rates: tuple[float, float, float]) -> None:
    found = quote(model, configured={}, base_url=base_url, default=DEFAULT)
    assert (found.source, found.provider) == ("library", provider)
    got = (found.price.input, found.price.cached_input, found.price.output)
    assert got == pytest.approx(rates)


def test_an_unknown_model_on_an_unknown_endpoint_gets_the_default_and_says_so() -> None:
    found = quote("house-model-7", configured={}, base_url="https://llm.example.com/v1",
                  default=DEFAULT)
    assert found.price == DEFAULT and found.source == "default" and not found.known


@pytest.mark.parametrize(("model", "base_url", "kind"), [
    ("llama3.2", "http://localhost:11434/v1", None),             # Ollama's port
    ("deepseek-r1:8b", "http://127.0.0.1:40123/v1", None),       # an Ollama tag on loopback
    ("deepseek-r1", "http://10.0.0.7:9000/v1", "local"),          # said in the settings
    ("Qwen/Qwen2.5-7B-Instruct", "http://gpu-box:8000/v1", "local"),
])
def test_a_local_servers_model_costs_nothing_unless_priced(model: str, base_url: str,
                                                           kind: str | None) -> None:
    """Not DeepSeek's API rates for an Ollama deepseek-r1: a local model bills nobody."""
    found = quote(model, configured={}, base_url=base_url, default=DEFAULT, kind=kind)
    assert found.price == ModelPrice(input=0, output=0) and found.source == "local"
    priced = quote(model, configured={model: ModelPrice(input=0.1, output=0.2)},
                   base_url=base_url, default=DEFAULT, kind=kind)
    assert priced.source == "configured"


@pytest.mark.parametrize(("model", "behind"), [
    ("openai/gpt-4o-mini", "gpt-4o-mini"), ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
])
def test_a_gateways_prefixed_id_is_priced_as_the_model_behind_it(model: str,
                                                                 behind: str) -> None:
    """The recorded cost was 19x the bill: the prefixed id fell to the default price."""
    found = quote(model, configured={}, base_url="http://127.0.0.1:4000/v1", default=DEFAULT)
    plain = quote(behind, configured={}, base_url=None, default=DEFAULT)
    assert found.source == "library" and found.price == plain.price != DEFAULT


def test_rehearsal_is_free_whatever_is_configured() -> None:
    settings = EngineSettings(prices={"gpt-4o": ModelPrice(input=1, output=1)})
    assert settings.price_quote("rehearsal").price == ModelPrice(input=0, output=0)
    assert settings.price_quote("rehearsal").source == "builtin"


def test_a_dialectic_toml_price_overrides_the_library(tmp_path: Path) -> None:
    config = tmp_path / "dialectic.toml"
    config.write_text('[prices."gpt-4o-mini"]\ninput = 0.10\noutput = 0.40\ncached_input = 0.01\n'
                      '[prices."llama3.2"]\ninput = 0\noutput = 0\n')
    engine = load_settings({"DIALECTIC_CONFIG": str(config), "OPENAI_API_KEY": "sk-test"}).engine
    mini = engine.price_quote("gpt-4o-mini")
    assert mini.source == "configured"
    assert mini.price == ModelPrice(input=0.10, output=0.40, cached_input=0.01)
    assert engine.price_for("llama3.2") == ModelPrice(input=0, output=0)
    assert engine.price_quote("o4-mini").source == "library"     # the rest still from the library
    assert engine.price_quote("my-finetune").source == "default"


def _step(key: str, model: str, usage: Usage, usd: float, calls: int = 1) -> StepRecord:
    return StepRecord(key=key, role="pro", phase="open", model=model, usage=usage,
                      cost_usd=usd, calls=calls)


def test_the_breakdown_totals_cached_and_reasoning_tokens_per_debate_and_per_model() -> None:
    cost = breakdown([
        _step("a", "o4-mini", Usage(prompt_tokens=1_000, completion_tokens=900, cached_tokens=512,
                                    reasoning_tokens=700), 0.005),
        _step("b", "o4-mini", Usage(prompt_tokens=2_000, completion_tokens=100,
                                    cached_tokens=1_024), 0.002),
        _step("c", "gpt-4o-mini", Usage(prompt_tokens=400, completion_tokens=50), 0.0001),
        _step("d", "gpt-4o-mini", Usage(prompt_tokens=9, cached_tokens=9), 0.0, calls=0),  # reused
    ], reused=1)
    assert (cost.prompt_tokens, cost.completion_tokens) == (3_400, 1_050)
    assert (cost.cached_tokens, cost.reasoning_tokens) == (1_536, 700)
    assert (cost.calls, cost.reused_calls, cost.usd) == (3, 1, 0.0071)
    assert cost.by_model["o4-mini"] == {"usd": pytest.approx(0.007), "calls": 2,
                                        "prompt_tokens": 3_000, "completion_tokens": 1_000,
                                        "cached_tokens": 1_536, "reasoning_tokens": 700}
    assert cost.by_model["gpt-4o-mini"]["cached_tokens"] == 0
    assert token_summary(cost) == "4,450 tokens (1,536 cached, 700 reasoning)"


def test_a_time_of_day_discount_is_not_counted_on() -> None:
    """DeepSeek's off-peak hours halve its prices in the library; a quote (what the cap and the
    holds use, whatever the hour the process started) is the day's dearest rate."""
    from datetime import UTC, datetime

    import genai_prices

    def library(hour: int) -> float:
        at = datetime.now(UTC).replace(hour=hour, minute=45)
        usage = genai_prices.Usage(output_tokens=1_000_000)
        return float(genai_prices.calc_price(usage, "deepseek-chat", provider_id="deepseek",
                                             genai_request_timestamp=at).total_price)

    off_peak, peak = library(18), library(8)
    assert off_peak < peak                         # the library knows the discount
    found = quote("deepseek-chat", configured={}, base_url=DEEPSEEK, default=DEFAULT)
    assert found.price.output == pytest.approx(peak)
