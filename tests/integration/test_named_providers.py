"""Several providers at once, against two simulations on loopback through the real `openai`
client: a debate whose sides and judges use both completes and costs the two bills; each
provider has its own profile, lessons, concurrency and read timeout; `dialectic doctor` says a
line per provider and where each model goes; a body that stalls is cut at the read timeout and
retried, its unknown bill said, not guessed."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import BaseModel

from bot.service.providers import make_llm
from bot.settings import Settings
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.errors import LLMCircuitOpen, LLMError, LLMTimeout
from engine.money.prices import quote
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Meter, Prompt
from engine.provider.routing import ProviderRouter
from engine.settings import EngineSettings, ModelPrice
from storage import answers
from storage.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.token_usage import bill_usd
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.pg_server import free_port

__all__ = ["clean_env", "cli"]  # fixtures

TOPIC = "Should we move billing to PostgreSQL?"
CLAUDE_RATE = ModelPrice(input=3.0, output=15.0)
GPT_RATE = ModelPrice(input=0.15, output=0.60)
TEMPERATURE_400 = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0.7 with this model. Only the "
               "default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}


class Answer(BaseModel):
    answer: str


def two_providers(gpt: str, claude: str, **more: Any) -> EngineSettings:
    """GPT argues for and Claude against; a judge from each; no default endpoint at all."""
    return EngineSettings(
        default_model="gpt:gpt-4o-mini", models={"con": "claude:claude-sonnet-4-5"},
        judges=({"name": "engineer", "expertise": "technical soundness",
                 "model": "gpt:gpt-4o-mini"},
                {"name": "auditor", "expertise": "risk", "model": "claude:claude-sonnet-4-5"}),
        providers={"gpt": {"base_url": gpt, "kind": "openai",
                           "prices": {"gpt-4o-mini": GPT_RATE}},
                   "claude": {"base_url": claude, "kind": "anthropic", "api_key": "sk-ant-x",
                              "prices": {"claude-sonnet-4-5": CLAUDE_RATE}}},
        **more)


@pytest.mark.integration
async def test_a_debate_on_two_providers_completes_and_costs_their_two_bills() -> None:
    async with FakeOpenAI(replies="typical", seed=5) as gpt, \
            FakeOpenAI(replies="typical", seed=6, provider="anthropic") as claude:
        settings = two_providers(gpt.base_url, claude.base_url)
        assert not settings.is_rehearsal
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="consensus"))
        llm = make_llm(settings)
        assert isinstance(llm, ProviderRouter)
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=llm,
                                      store=MemoryCheckpointStore(), sink=MemoryEventSink())
        finally:
            await llm.aclose()
    assert result.complete, [d.get("reason") for d in result.degraded]
    assert {r.body["model"] for r in gpt.requests} == {"gpt-4o-mini"}
    assert {r.body["model"] for r in claude.requests} == {"claude-sonnet-4-5"}
    assert {r.role for r in claude.requests} >= {"con", "judge/auditor"}
    assert {r.role for r in gpt.requests} >= {"pro", "judge/engineer"}
    # each provider asked by its own profile: Claude never sent a response_format
    assert all("response_format" not in r.body for r in claude.requests)
    assert all(r.body["response_format"]["type"] == "json_schema" for r in gpt.requests)
    bills = (gpt.bill_usd(input=GPT_RATE.input, output=GPT_RATE.output)
             + claude.bill_usd(input=CLAUDE_RATE.input, output=CLAUDE_RATE.output))
    assert result.cost.usd == pytest.approx(bills, abs=1e-6)   # recorded to the micro-dollar
    assert result.cost.calls == gpt.answered() + claude.answered()


@pytest.mark.integration
async def test_each_provider_learns_its_own_lessons_and_keeps_its_own_concurrency() -> None:
    async with FakeOpenAI(latency=0.05) as gpt, FakeOpenAI(latency=0.05) as claude:
        claude.fail(lambda body: "temperature" in body, 400, body=TEMPERATURE_400, times=None)
        settings = two_providers(gpt.base_url, claude.base_url).model_copy(update={
            "providers": {**two_providers(gpt.base_url, claude.base_url).providers,
                          "claude": two_providers(gpt.base_url, claude.base_url)
                          .providers["claude"].model_copy(update={"max_concurrency": 1,
                                                                  "kind": "openai"})}})
        router = ProviderRouter(settings)
        try:
            calls = [router.complete(CallSpec(model=model, prompt=Prompt("s", f"u{i}"),
                                              schema=Answer, role="pro", temperature=0.7))
                     for i in range(4) for model in ("gpt:gpt-4o-mini",
                                                     "claude:claude-sonnet-4-5")]
            replies = await asyncio.gather(*calls)
            claude_lessons = router.gateway("claude").learned.lessons()
            gpt_lessons = router.gateway("gpt").learned.lessons()
        finally:
            await router.aclose()
    assert {r.model.split(":", 1)[0] for r in replies} == {"gpt", "claude"}
    assert [d for lesson in claude_lessons.values() for d in lesson.dropped] == ["temperature"]
    assert gpt_lessons == {}
    assert all(r.body.get("temperature") == 0.7 for r in gpt.requests)
    assert claude.max_in_flight == 1 and gpt.max_in_flight > 1


@pytest.mark.integration
async def test_a_stalled_body_is_cut_at_the_read_timeout_retried_and_its_bill_not_guessed(
        ) -> None:
    async with FakeOpenAI(replies="typical", seed=2) as fake:
        fake.stall(lambda body: True, seconds=30)
        settings = EngineSettings(openai_api_key="k", openai_base_url=fake.base_url,
                                  read_timeout=0.3)
        gateway = OpenAIGateway(settings)
        reasons: list[str] = []

        async def on_retry(attempt: int, reason: str, delay: float) -> None:
            reasons.append(reason)

        meter = Meter()
        try:
            reply = await gateway.complete(CallSpec(
                model="gpt-4o-mini", prompt=Prompt("s", TOPIC), schema=Answer, role="pro",
                timeout=20, on_retry=on_retry, meter=meter))
        finally:
            await gateway.aclose()
    assert [r.outcome for r in fake.requests] == ["stalled", "reply"]
    assert reasons == ["reply stalled past the read timeout; its usage never arrived, its bill "
                       "is unknown"]
    completed = fake.requests[1].usage
    assert completed is not None
    # what arrived is recorded; the stalled reply's usage never came and is not invented
    assert meter.calls == reply.calls == 1
    assert reply.usage.prompt_tokens == completed["prompt_tokens"]
    assert reply.usage.completion_tokens == completed["completion_tokens"]


@pytest.mark.integration
async def test_a_debate_step_whose_body_stalls_says_so_and_costs_what_arrived() -> None:
    """Through the runner: the stalled step is retried within its budget, the retry's event says
    its bill is unknown, and the debate's recorded cost is what the arrived replies reported
    (the provider billed the stalled one too: the difference is that reply, not a guess)."""
    async with FakeOpenAI(replies="typical", seed=4) as gpt, \
            FakeOpenAI(replies="typical", seed=4, provider="anthropic") as claude:
        claude.stall(lambda body: True, seconds=30, times=1)
        settings = two_providers(gpt.base_url, claude.base_url, read_timeout=0.3)
        prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple"))
        llm, sink = make_llm(settings), MemoryEventSink()
        try:
            result = await run_debate(prepared, debate_id="d1", settings=settings, llm=llm,
                                      store=MemoryCheckpointStore(), sink=sink)
        finally:
            await llm.aclose()
    assert result.complete
    retries = [e.data for e in sink.events if e.kind == "step_retry"]
    assert [r["reason"] for r in retries] == ["reply stalled past the read timeout; its usage "
                                              "never arrived, its bill is unknown"]
    stalled = [r for r in claude.requests if r.outcome == "stalled"]
    assert len(stalled) == 1 and stalled[0].usage is not None
    arrived = [r.usage for r in claude.requests if r.outcome != "stalled" and r.usage]
    claude_arrived = bill_usd(arrived, input=CLAUDE_RATE.input, output=CLAUDE_RATE.output)
    gpt_bill = gpt.bill_usd(input=GPT_RATE.input, output=GPT_RATE.output)
    assert result.cost.usd == pytest.approx(gpt_bill + claude_arrived, abs=1e-6)
    assert result.cost.calls == gpt.answered() + claude.answered() - 1


@pytest.mark.integration
async def test_a_body_that_stalls_again_fails_the_call_saying_its_bill_is_unknown() -> None:
    async with FakeOpenAI() as gpt, FakeOpenAI() as claude:
        claude.stall(lambda body: True, seconds=30, times=None)
        settings = two_providers(gpt.base_url, claude.base_url, read_timeout=60.0)
        settings = settings.model_copy(update={"providers": {
            **settings.providers, "claude": settings.providers["claude"].model_copy(
                update={"read_timeout": 0.3})}})
        router = ProviderRouter(settings)
        try:
            with pytest.raises(LLMTimeout) as caught:
                await router.complete(CallSpec(model="claude:claude-sonnet-4-5",
                                               prompt=Prompt("s", TOPIC), schema=Answer,
                                               role="con", timeout=20))
            fine = await router.complete(CallSpec(model="gpt:gpt-4o-mini", timeout=20,
                                                  prompt=Prompt("s", TOPIC), schema=Answer,
                                                  role="pro"))
        finally:
            await router.aclose()
    assert caught.value.stalled and "what it billed is unknown" in str(caught.value)
    assert [r.outcome for r in claude.requests] == ["stalled", "stalled"]
    assert fine.model.startswith("gpt:gpt-4o-mini")   # the other provider: its own timeout


def _doctor_toml(path: Path, gpt: str, claude: str) -> Path:
    path.write_text(f'''default_model = "gpt:gpt-4o-mini"
models = {{ con = "claude:claude-sonnet-4-5", judge = "llama3:8b" }}

[providers.gpt]
base_url = "{gpt}"
api_key_env = "GPT_KEY"

[providers.claude]
base_url = "{claude}"
api_key_env = "ANTHROPIC_API_KEY"
kind = "anthropic"
[providers.claude.prices."claude-sonnet-4-5"]
input = 3.0
output = 15.0
''')
    return path


async def test_doctor_says_a_line_per_provider_and_where_each_model_goes(
        cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as gpt, FakeOpenAI(provider="anthropic") as claude, \
            FakeOpenAI(provider="ollama") as local:
        config = _doctor_toml(tmp_path / "dialectic.toml", gpt.base_url, claude.base_url)
        done = await asyncio.to_thread(cli, "doctor", env={
            "DIALECTIC_CONFIG": str(config), "GPT_KEY": "sk-gpt-doctor-secret",
            "ANTHROPIC_API_KEY": "sk-ant-doctor-secret", "OPENAI_BASE_URL": local.base_url,
            "DIALECTIC_PROVIDER_KIND": "local"})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "sk-gpt-doctor-secret" not in out and "sk-ant-doctor-secret" not in out
    lines = done.stdout.splitlines()
    (claude_line,) = [x for x in lines if x.startswith("Provider claude (")]
    assert claude_line.startswith(f"Provider claude ({claude.base_url}, Anthropic's OpenAI "
                                  "compatibility): reachable · 1 of 1 models answer · plain text")
    assert claude_line.endswith("prices known")
    (gpt_line,) = [x for x in lines if x.startswith("Provider gpt (")]
    assert "reachable · 1 of 1 models answer" in gpt_line
    (default_line,) = [x for x in lines if x.startswith("Default endpoint (OPENAI_BASE_URL)")]
    assert local.base_url in default_line and "a local server" in default_line
    model_lines = {x.split(": ok", 1)[0]: x for x in lines if ": ok" in x}
    assert "→ provider claude" in model_lines["claude:claude-sonnet-4-5"]
    assert "→ provider gpt" in model_lines["gpt:gpt-4o-mini"]
    assert "→ provider" not in model_lines["llama3:8b"]   # the Ollama tag: the default endpoint
    assert {r.body["model"] for r in claude.requests} == {"claude-sonnet-4-5"}
    assert {r.body["model"] for r in local.requests} == {"llama3:8b"}
    assert "All 3 models answered." in done.stdout


async def test_doctor_names_the_provider_variable_to_fix(cli: Cli, tmp_path: Path) -> None:
    async with FakeOpenAI() as gpt, FakeOpenAI(provider="anthropic") as claude:
        claude.fail(lambda body: True, 401, times=None)
        config = _doctor_toml(tmp_path / "dialectic.toml", gpt.base_url, claude.base_url)
        done = await asyncio.to_thread(cli, "doctor", env={
            "DIALECTIC_CONFIG": str(config), "GPT_KEY": "sk-gpt",
            "ANTHROPIC_API_KEY": "sk-ant-refused-secret", "OPENAI_API_KEY": "sk-default"})
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("claude:claude-sonnet-4-5")]
    assert "refused the key (HTTP 401): set ANTHROPIC_API_KEY" in line
    assert "sk-ant-refused-secret" not in done.stdout + done.stderr


def test_the_library_prices_a_named_openai_provider_as_openai() -> None:
    """A provider whose kind is openai is priced as OpenAI's models (its host says nothing)."""
    settings = EngineSettings(default_model="gpt:gpt-4o-mini", providers={
        "gpt": {"base_url": "http://127.0.0.1:9/v1", "kind": "openai"}})
    expected = quote("gpt-4o-mini", configured={}, base_url=None,
                     default=ModelPrice(input=0, output=0)).price
    assert settings.price_for("gpt:gpt-4o-mini") == expected


async def test_an_api_request_routes_its_models_and_refuses_an_unconfigured_provider(
        db: Database) -> None:
    """The API's models are `NAME:model` as the settings' are; a provider nobody configured is
    a 400 in one line before anything is held or asked."""
    async with FakeOpenAI() as gpt, FakeOpenAI(provider="anthropic") as claude:
        engine = two_providers(gpt.base_url, claude.base_url)
        settings = Settings(engine=engine, poll_interval=0.05, cache_ttl_seconds=0)
        async with served(db, settings) as (base, _, _), aiohttp.ClientSession() as s:
            status, body = await call(s, "POST", f"{base}/api/debates", json={
                "topic": TOPIC, "mode": "simple",
                "options": {"role_models": {"con": "anthropic:claude-sonnet-4-5"}}})
            assert status == 400 and "'anthropic', which is not configured" in str(body)
            assert gpt.count() == claude.count() == 0
            status, body = await call(s, "POST", f"{base}/api/debates", json={
                "topic": TOPIC, "mode": "simple",
                "options": {"role_models": {"pro": "claude:claude-sonnet-4-5"}}})
            assert status == 202, body
            async with asyncio.timeout(60):
                while (record := (await call(s, "GET", f"{base}/api/debates/{body['id']}"))[1]
                       )["result"] is None:
                    await asyncio.sleep(0.1)
        async with db.transaction(readonly=True) as session:   # kept by each one's endpoint
            at_claude = await answers.known(session, engine.for_provider("claude").endpoint_key)
            at_default = await answers.known(session, engine.endpoint_key)
    assert record["status"] == "completed" and record["result"]["complete"], record
    assert {r.role for r in claude.requests} == {"pro", "con"}
    assert {r.role for r in gpt.requests} == {"judge"}
    assert set(at_claude) == {"claude-sonnet-4-5"} and at_default == {}


async def test_one_providers_open_circuit_leaves_the_other_answering() -> None:
    """Each provider has its own circuit: the one nobody answers fails at once after its
    failures; the other's calls go on."""
    nobody = f"http://127.0.0.1:{free_port()}/v1"   # nothing listens there
    async with FakeOpenAI() as gpt:
        settings = two_providers(gpt.base_url, nobody, circuit_failures=1,
                                 circuit_cooldown=60.0, max_retries=0)
        router = ProviderRouter(settings)
        spec = CallSpec(model="claude:claude-sonnet-4-5", prompt=Prompt("s", TOPIC),
                        schema=Answer, role="con", timeout=5)
        try:
            with pytest.raises(LLMError):
                await router.complete(spec)
            with pytest.raises(LLMCircuitOpen):
                await router.complete(spec)
            fine = await router.complete(replace(spec, model="gpt:gpt-4o-mini", role="pro"))
        finally:
            await router.aclose()
    assert fine.model.startswith("gpt:") and gpt.count() == 1


async def test_each_providers_lessons_are_kept_apart_and_forgotten_with_the_rest(
        cli: Cli, tmp_path: Path) -> None:
    """What Claude's endpoint taught (temperature refused) is kept in the database under its
    endpoint: the next `doctor` process starts knowing it there and only there; `--forget`
    forgets every provider's."""
    env = {"GPT_KEY": "sk-gpt", "ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-default",
           "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'dialectic.db'}"}
    assert (await asyncio.to_thread(cli, "db", "upgrade", env=env)).returncode == 0
    async with FakeOpenAI() as gpt, FakeOpenAI() as claude, FakeOpenAI() as default:
        claude.fail(lambda body: "temperature" in body, 400, body=TEMPERATURE_400, times=None)
        env |= {"OPENAI_BASE_URL": default.base_url, "DIALECTIC_CONFIG": str(_doctor_toml(
            tmp_path / "dialectic.toml", gpt.base_url, claude.base_url).resolve())}
        first = await asyncio.to_thread(cli, "doctor", env=env)
        second = await asyncio.to_thread(cli, "doctor", env=env)
        forgot = await asyncio.to_thread(cli, "doctor", "--forget", env=env)
    assert first.returncode == second.returncode == 0, first.stdout + first.stderr
    said = {x.split(": ok", 1)[0]: x for x in second.stdout.splitlines() if ": ok" in x}
    assert "temperature dropped" in said["claude:claude-sonnet-4-5"]
    assert "temperature dropped" not in said["gpt:gpt-4o-mini"]
    # first: refused, then asked without; the second process: without at once; after
    # --forget: asked as new, refused, learned again. GPT kept its temperature throughout
    claude_asked = [r.body for r in claude.requests]
    assert ["temperature" in b for b in claude_asked] == [True, False, False, True, False]
    assert all("temperature" in r.body for r in gpt.requests)
    assert "Forgot what the endpoints taught about 1 model(s)." in forgot.stdout
