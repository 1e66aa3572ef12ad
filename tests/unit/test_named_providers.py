"""Named providers' names and settings: which names a configured prefix routes (and which stay
bare: gateway slashes, Ollama tags, fine-tunes), the one-line errors for a provider nobody
configured, and prices, estimates and secrets per provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.service.providers import describe
from bot.settings import load_settings
from engine.core.planning import estimate_for, prepare
from engine.domain import DebateRequest
from engine.errors import ConfigurationError, InvalidRequest
from engine.money.answering import STAND_IN
from engine.provider.naming import qualified, split_model, unknown_prefix
from engine.settings import EngineSettings, ModelPrice

CONFIGURED = frozenset({"claude", "openai", "ollama", "deepseek"})


@pytest.mark.parametrize(("model", "expected"), [
    ("claude:claude-sonnet-4-5", ("claude", "claude-sonnet-4-5")),
    ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
    ("ollama:llama3:8b", ("ollama", "llama3:8b")),          # a named Ollama keeps its tag
    ("llama3:8b", (None, "llama3:8b")),                      # an Ollama tag: the default endpoint
    ("deepseek-r1:7b", (None, "deepseek-r1:7b")),
    ("qwen3:latest", (None, "qwen3:latest")),
    ("openai/gpt-4o-mini", (None, "openai/gpt-4o-mini")),    # a gateway id: a slash, not a colon
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", (None, "ft:gpt-4o-mini-2024-07-18:acme::abc123")),
    ("claude:", (None, "claude:")),                          # nothing behind the prefix
    ("gpt-5-mini", (None, "gpt-5-mini")),
])
def test_a_prefix_counts_only_when_it_names_a_configured_provider(
        model: str, expected: tuple[str | None, str]) -> None:
    assert split_model(model, CONFIGURED) == expected
    assert qualified(*expected) == model


@pytest.mark.parametrize(("model", "providers", "said"), [
    ("antropic:claude-sonnet-4-5", {"anthropic"}, "did you mean 'anthropic'?"),
    ("anthropic:claude-sonnet-4-5", set(), "add [providers.anthropic]"),
    ("gemini:gemini-2.5-flash", {"claude"}, "configured providers: claude"),
    ("deepseek-r1:7b", {"deepseek"}, None),        # an Ollama tag, though near a provider's name
    ("deepseek:7b", set(), None),                  # a size tag: an Ollama model named deepseek
    ("llama3:8b", {"llama"}, None),
    ("qwen3:latest", set(), None),
    ("openai/gpt-4o-mini", set(), None),
    ("ft:gpt-4o-mini:acme::x", {"openai"}, None),
    ("claude:claude-sonnet-4-5", {"claude"}, None),
])
def test_a_provider_nobody_configured_is_said_in_one_line(
        model: str, providers: set[str], said: str | None) -> None:
    found = unknown_prefix(model, providers)
    if said is None:
        assert found is None
    else:
        assert found is not None and said in found and "\n" not in found


def _toml(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "dialectic.toml"
    path.write_text(text)
    return {"DIALECTIC_CONFIG": str(path)}


CLAUDE = ('[providers.claude]\nbase_url = "https://api.anthropic.com/v1/"\n'
          'api_key_env = "ANTHROPIC_API_KEY"\nkind = "anthropic"\n')


@pytest.mark.parametrize(("text", "env", "said"), [
    ('default_model = "antropic:claude-sonnet-4-5"\n' + CLAUDE.replace("claude]", "anthropic]"),
     {"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "k"}, "did you mean 'anthropic'?"),
    ('[[judges]]\nname = "a"\nexpertise = "x"\nmodel = "gemini:gemini-2.5-flash"\n'
     '[[judges]]\nname = "b"\nexpertise = "y"\n' + CLAUDE,
     {"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "k"}, "'gemini', which is not configured"),
    (CLAUDE, {"OPENAI_API_KEY": "k"}, "api_key_env names ANTHROPIC_API_KEY, which is not set"),
    (CLAUDE + 'api_key = "sk-ant-in-the-file"\n', {"ANTHROPIC_API_KEY": "sk-ant"},
     "do not write the key in the settings"),
    ('[providers.Claude]\nbase_url = "https://api.anthropic.com/v1/"\n', {"OPENAI_API_KEY": "k"},
     "provider name 'Claude'"),
    ('[providers.claude]\nkind = "anthropic"\n', {"OPENAI_API_KEY": "k"},
     "a provider needs base_url"),
    ('[providers.claude]\nbase_url = "htps://api.anthropic.com/v1/"\n', {"OPENAI_API_KEY": "k"},
     "did you mean https://api.anthropic.com/v1/?"),
    (CLAUDE, {"ANTHROPIC_API_KEY": "sk-ant"},
     "model 'gpt-5-mini' goes to the default endpoint, but neither OPENAI_API_KEY"),
])
def test_provider_mistakes_are_one_line_at_load(tmp_path: Path, text: str, env: dict[str, str],
                                               said: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({**_toml(tmp_path, text), **env})
    message = str(caught.value)
    assert said in message and "\n" not in message
    assert "sk-ant" not in message


def test_the_ollama_tag_and_the_gateway_id_keep_going_to_the_default_endpoint(
        tmp_path: Path) -> None:
    settings = load_settings({**_toml(tmp_path, 'default_model = "llama3:8b"\n[models]\n'
                                      'judge = "openai/gpt-4o-mini"\n'
                                      'con = "claude:claude-sonnet-4-5"\n' + CLAUDE),
                              "ANTHROPIC_API_KEY": "sk-ant-secret",
                              "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}).engine
    assert settings.route(settings.model_for("pro")) == (None, "llama3:8b")
    assert settings.route(settings.model_for("judge")) == (None, "openai/gpt-4o-mini")
    assert settings.route(settings.model_for("con")) == ("claude", "claude-sonnet-4-5")
    assert settings.price_quote("llama3:8b").source == "local"   # the default endpoint's kind
    claude = settings.for_provider("claude")
    assert claude.openai_base_url == "https://api.anthropic.com/v1/"
    assert claude.provider_kind == "anthropic"
    assert "sk-ant-secret" in settings.secrets()      # redacted from every log line
    assert "sk-ant-secret" not in describe(settings) and "api.anthropic.com" in describe(settings)


def _two(claude_price: ModelPrice, *, top: dict[str, ModelPrice] | None = None
         ) -> EngineSettings:
    return EngineSettings(
        default_model="openai:gpt-4o-mini", models={"con": "claude:claude-sonnet-4-5"},
        prices=top or {},
        providers={"openai": {"base_url": "http://127.0.0.1:9/v1",
                              "prices": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}},
                   "claude": {"base_url": "http://127.0.0.2:9/v1", "kind": "anthropic",
                              "prices": {"claude-sonnet-4-5": claude_price}}})


def test_the_estimate_prices_each_step_by_the_provider_that_answers_it() -> None:
    cheap, dear = ModelPrice(input=3.0, output=15.0), ModelPrice(input=30.0, output=150.0)
    request = DebateRequest(topic="Should we move billing to PostgreSQL?", mode="simple")
    base = _two(cheap)
    assert base.price_for("claude:claude-sonnet-4-5") == cheap
    assert base.price_for("openai:gpt-4o-mini") == ModelPrice(input=0.15, output=0.6)
    assert base.priced_model("claude:claude-sonnet-4-5") == "claude:claude-sonnet-4-5"
    assert base.priced_model("claude:claude-unknown-9") == STAND_IN   # never answered, unknown
    # the bare name's price at the top is another endpoint's model: it changes nothing here
    same = _two(cheap, top={"claude-sonnet-4-5": dear})
    dearer = _two(dear)
    low = estimate_for(base, prepare(base, request)).usd_high
    assert estimate_for(same, prepare(same, request)).usd_high == pytest.approx(low)
    assert estimate_for(dearer, prepare(dearer, request)).usd_high > low * 2
    # the answering model's name, once learned at the provider's endpoint, is what is priced
    base.answers.learn(base.for_provider("openai").endpoint_key, "gpt-4o-mini",
                       "gpt-4o-mini-2024-07-18")
    assert base.priced_model("openai:gpt-4o-mini") == "openai:gpt-4o-mini-2024-07-18"
    assert base.price_for("openai:gpt-4o-mini-2024-07-18") == ModelPrice(input=0.15, output=0.6)
    assert base.priced_model("gpt-4o-mini") == "gpt-4o-mini"   # the default endpoint: not it


def test_a_request_naming_an_unconfigured_provider_is_refused_before_anything_is_spent() -> None:
    settings = _two(ModelPrice(input=3.0, output=15.0))
    request = DebateRequest(topic="Should we move billing to PostgreSQL?", mode="simple",
                            options={"role_models": {"pro": "anthropic:claude-sonnet-4-5"}})
    with pytest.raises(InvalidRequest, match="'anthropic', which is not configured") as caught:
        prepare(settings, request)
    assert "\n" not in str(caught.value)
    fine = request.model_copy(update={"options": request.options.model_copy(
        update={"role_models": {"pro": "claude:claude-sonnet-4-5"}})})
    assert prepare(settings, fine).request.options.role_models["pro"] == "claude:claude-sonnet-4-5"


def test_a_bare_model_with_no_default_endpoint_is_refused_at_submit() -> None:
    settings = _two(ModelPrice(input=3.0, output=15.0))   # named providers only
    assert not settings.has_default_endpoint and not settings.is_rehearsal
    request = DebateRequest(topic="Should we move billing to PostgreSQL?", mode="simple",
                            options={"role_models": {"pro": "gpt-4o-mini"}})
    with pytest.raises(InvalidRequest, match="'gpt-4o-mini' goes to the default endpoint"):
        prepare(settings, request)
    assert "no default endpoint" in describe(settings)
