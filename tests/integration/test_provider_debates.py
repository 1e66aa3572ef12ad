"""Every mode completes against each provider's simulation at the default settings, through the
real `openai` client, and the recorded cost is the provider's bill within 2 %: Anthropic's and
Gemini's compatibility endpoints, an Azure reasoning deployment, a gateway, vLLM, llama.cpp's
server and Ollama with a thinking model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.errors import InvalidRequest
from engine.money.prices import quote
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.settings import EngineSettings, ModelPrice
from engine.vocabulary import Mode
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should we move billing to PostgreSQL?"
#: what a 4k window cannot hold: a judge's transcript, a synthesis of six phases
TOO_BIG_FOR_4K = {"structured", "consensus", "panel", "critique", "redteam"}
LOCAL_PRICE = ModelPrice(input=0.05, output=0.10)   # configured, so the bill can be compared


@dataclass(frozen=True)
class Case:
    model: str
    fake: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    price: tuple[float, float] | None = None        # the provider's rates (in, out)
    library: str | None = None                       # rates as the price library has them


CASES: dict[str, Case] = {
    "anthropic": Case("claude-sonnet-4-5", {"provider": "anthropic"}, price=(3.0, 15.0)),
    "gemini": Case("gemini-2.5-flash", {"provider": "gemini"}, price=(0.30, 2.50)),
    "azure": Case("reasoning-prod", {"provider": "azure",
                                     "deployments": {"reasoning-prod": "o4-mini"}},
                  library="o4-mini"),
    "gateway": Case("openai/gpt-4o-mini", {"provider": "gateway"},
                    {"provider_kind": "gateway"}),
    "vllm": Case("Qwen/Qwen2.5-7B-Instruct", {"provider": "vllm", "context_window": 8192,
                                              "serves": ("Qwen/Qwen2.5-7B-Instruct",)},
                 {"provider_kind": "local"}, price=(0.05, 0.10)),
    "llamacpp": Case("qwen2.5-7b-instruct", {"provider": "llamacpp", "context_window": 4096},
                     {"provider_kind": "local",
                      "context_windows": {"qwen2.5-7b-instruct": 4096}}, price=(0.05, 0.10)),
    "ollama": Case("deepseek-r1:8b", {"provider": "ollama"}, price=(0.05, 0.10)),
}


def settings_for(case: Case, base_url: str) -> EngineSettings:
    prices = {}
    if case.price is not None:
        prices[case.model] = ModelPrice(input=case.price[0], output=case.price[1])
    return EngineSettings(openai_api_key="sk-test", openai_base_url=base_url,
                          default_model=case.model, prices=prices, **case.settings)


def bill(case: Case, fake: FakeOpenAI) -> float:
    if case.fake["provider"] == "gateway":
        return fake.gateway_bill()
    if case.library is not None:
        rate = quote(case.library, configured={}, base_url=None,
                     default=ModelPrice(input=0, output=0)).price
        return fake.bill_usd(input=rate.input, output=rate.output,
                             cached_input=rate.cached_input)
    assert case.price is not None
    return fake.bill_usd(input=case.price[0], output=case.price[1])


@pytest.mark.integration
@pytest.mark.parametrize("mode", [m.value for m in Mode])
@pytest.mark.parametrize("provider", sorted(CASES))
async def test_every_mode_completes_and_costs_the_bill(provider: str, mode: str) -> None:
    case = CASES[provider]
    async with FakeOpenAI(replies="typical", seed=3, **case.fake) as fake:
        settings = settings_for(case, fake.base_url)
        if provider == "llamacpp" and mode in TOO_BIG_FOR_4K:
            with pytest.raises(InvalidRequest, match="4,096-token window"):
                prepare(settings, DebateRequest(topic=TOPIC, mode=mode))
            assert fake.count() == 0, "said before anything is spent"
            return
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode=mode))
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink())
        finally:
            await gateway.aclose()
    assert result.complete, [d.get("reason") for d in result.degraded]
    assert result.cost.usd == pytest.approx(bill(case, fake), rel=0.02)


@pytest.mark.integration
async def test_a_window_the_server_reports_stops_a_debate_it_cannot_hold_before_any_call(
        ) -> None:
    """No window configured: llama.cpp's /props says 4,096, and a red team stops before its
    first call, saying why (nothing paid for and lost at the window)."""
    case = CASES["llamacpp"]
    async with FakeOpenAI(replies="typical", seed=3, **case.fake) as fake:
        settings = settings_for(case, fake.base_url).model_copy(update={"context_windows": {}})
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="redteam"))
        gateway = OpenAIGateway(settings)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink())
        finally:
            await gateway.aclose()
    assert result.status == "failed" and "4,096-token window" in result.error
    assert fake.count() == 0 and result.cost.usd == 0
