"""`dialectic doctor`: one tiny call per configured model, one line each, configured as users do
(the environment and a real dialectic.toml), against the fake provider on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

TEMPERATURE_400 = {"error": {
    "message": "Unsupported value: 'temperature' does not support 0.7 with this model. Only the "
               "default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}
NOT_FOUND_404 = {"error": {"message": "The model `gpt-9` does not exist or you do not have access "
                                      "to it.", "type": "invalid_request_error", "param": None,
                           "code": "model_not_found"}}


def lines_of(text: str) -> dict[str, str]:
    return {line.split(":", 1)[0]: line for line in text.splitlines() if ": " in line}


async def test_every_configured_model_gets_one_line(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "dialectic.toml"
    config.write_text('default_model = "gpt-4o-mini"\n'
                      'models = { judge = "house-model" }\n'
                      '[prices."house-model"]\ninput = 1.0\noutput = 2.0\n')
    async with FakeOpenAI() as fake:
        fake.fail(lambda body: body.get("model") == "house-model" and "temperature" in body,
                  400, body=TEMPERATURE_400)
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "sk-doctor-secret", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_CONFIG": str(config)})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = lines_of(done.stdout)
    assert lines["gpt-4o-mini"].startswith("gpt-4o-mini: ok · answered as gpt-4o-mini-2024-")
    assert "structured outputs (strict JSON schema)" in lines["gpt-4o-mini"]
    assert "temperature dropped" in lines["house-model"]
    assert "price known: $1 in / $2 out per million tokens" in lines["house-model"]
    assert "All 2 models answered." in done.stdout
    assert "sk-doctor-secret" not in done.stdout + done.stderr
    asked = {r.body["model"] for r in fake.requests}
    assert asked == {"gpt-4o-mini", "house-model"}


async def test_a_model_the_endpoint_does_not_know_is_one_line_with_the_fix(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        fake.fail(lambda body: True, 404, body=NOT_FOUND_404, times=None)
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_DEFAULT_MODEL": "gpt-9"})
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("gpt-9")]
    assert "does not know the model 'gpt-9' (HTTP 404)" in line
    assert "DIALECTIC_DEFAULT_MODEL" in line
    assert "Traceback" not in done.stdout + done.stderr


async def test_a_wrong_key_says_which_variable(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        fake.fail(lambda body: True, 401, times=None)
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "sk-wrong", "OPENAI_BASE_URL": fake.base_url})
    assert done.returncode == 1
    assert "refused the key (HTTP 401): set OPENAI_API_KEY" in done.stdout
    assert "sk-wrong" not in done.stdout + done.stderr


def test_an_unreachable_endpoint_names_the_variable(cli: Cli) -> None:
    done = cli("doctor", env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                              "DIALECTIC_BACKOFF_BASE": "0", "DIALECTIC_BACKOFF_CAP": "0"})
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("gpt-")]
    assert "could not reach http://127.0.0.1:9/v1: connection refused; check OPENAI_BASE_URL" \
        in line


def test_without_a_provider_it_says_how_to_configure_one(cli: Cli) -> None:
    done = cli("doctor")
    assert done.returncode == 1
    assert "Set OPENAI_API_KEY" in done.stdout and "rehearsal" in done.stdout


async def test_the_guides_example_prints_what_the_guide_shows(cli: Cli) -> None:
    """docs/providers.md's `dialectic doctor` and the output it shows for the default model, run
    against the simulated OpenAI (only the endpoint and the latency differ)."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text()
    section = guide.split("## Models and providers", 1)[1]
    assert "```sh\n.venv/bin/dialectic doctor\n```" in section
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    async with FakeOpenAI(replies="typical") as fake:
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url})
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    assert [line.split(":")[0] for line in printed[:2]] == ["settings file", ".env file"]
    assert [line.split(":")[0] for line in shown[:2]] == ["settings file", ".env file"]
    assert printed[2] == f"Endpoint: {fake.base_url}" and shown[2].startswith("Endpoint: ")
    without_latency = shown[3].rsplit(" · ", 1)[0]
    assert printed[3].rsplit(" · ", 1)[0] == without_latency
    assert printed[-1] == "The model answered."


def test_a_provider_url_without_a_scheme_is_one_line_at_start(cli: Cli) -> None:
    for command in (("doctor",), ("run", "Should we?", "--mode", "simple")):
        done = cli(*command, env={"OPENAI_API_KEY": "sk-secret",
                                  "OPENAI_BASE_URL": "127.0.0.1:8900/v1"})
        assert done.returncode == 2
        said = (done.stdout + done.stderr).strip()
        assert said == ("error: OPENAI_BASE_URL: 127.0.0.1:8900/v1 is no http(s) URL; did you "
                        "mean http://127.0.0.1:8900/v1?")
        assert "sk-secret" not in done.stdout + done.stderr


async def test_a_base_url_that_answers_404_suggests_v1(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        wrong = fake.base_url.removesuffix("/v1") + "/openai"   # no API there
        done = await asyncio.to_thread(cli, "doctor", env={"OPENAI_API_KEY": "k",
                                                           "OPENAI_BASE_URL": wrong})
    assert done.returncode == 1
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("gpt-")]
    assert f"answered HTTP 404: no chat-completions API at this address; did you mean " \
           f"{wrong}/v1?" in line


async def test_claude_is_checked_in_prompt_mode_not_as_structured_outputs(cli: Cli) -> None:
    """Anthropic ignores `response_format`: "ok · structured outputs" was a false promise."""
    async with FakeOpenAI(provider="anthropic") as fake:
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "sk-ant-test", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_DEFAULT_MODEL": "claude-sonnet-4-5"})
    assert done.returncode == 0, done.stdout + done.stderr
    said = lines_of(done.stdout)["claude-sonnet-4-5"]
    assert "plain text (the schema in the prompt)" in said and "structured outputs" not in said


async def test_a_local_server_says_its_window_the_modes_too_big_and_no_price(cli: Cli) -> None:
    async with FakeOpenAI(provider="llamacpp", context_window=4096) as fake:
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_BASE_URL": fake.base_url, "DIALECTIC_PROVIDER_KIND": "local",
            "DIALECTIC_DEFAULT_MODEL": "deepseek-r1:8b"})
    assert done.returncode == 0, done.stdout + done.stderr
    said = lines_of(done.stdout)["deepseek-r1"]
    assert "via a local server" in said
    assert "context window 4,096 tokens (too small for structured, consensus, panel, critique, " \
           "redteam)" in said
    assert "no price: a local server's model costs nothing here" in said
    assert "price known" not in said


async def test_what_the_endpoint_taught_is_kept_shown_and_forgotten(cli: Cli,
                                                                    tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-test", "DIALECTIC_DEFAULT_MODEL": "house-model",
           "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'dialectic.db'}"}
    assert (await asyncio.to_thread(cli, "db", "upgrade", env=env)).returncode == 0
    async with FakeOpenAI() as fake:
        env["OPENAI_BASE_URL"] = fake.base_url
        fake.fail(lambda body: "temperature" in body, 400, body=TEMPERATURE_400, times=None)
        first = await asyncio.to_thread(cli, "doctor", env=env)
        second = await asyncio.to_thread(cli, "doctor", env=env)
        asked_second = [r.body for r in fake.requests[2:]]
        forgot = await asyncio.to_thread(cli, "doctor", "--forget", env=env)
    assert "temperature dropped" in lines_of(first.stdout)["house-model"]
    assert "temperature dropped" in lines_of(second.stdout)["house-model"]
    assert len(asked_second) == 1 and "temperature" not in asked_second[0], \
        "the second process started knowing it"
    assert "Forgot what the endpoint taught about 1 model(s)." in forgot.stdout
    assert "temperature" in fake.requests[3].body, "forgotten: asked as new"


async def test_a_deployment_is_priced_as_the_model_that_answers_for_it(cli: Cli) -> None:
    """An Azure-style deployment name no catalogue knows: once it answers, the line says which
    model answered and that its price is the one used; without an answer, that the name is
    priced pessimistically."""
    async with FakeOpenAI(deployments={"prod-reasoner": "o1-2024-12-17"}) as fake:
        done = await asyncio.to_thread(cli, "doctor", env={
            "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url,
            "DIALECTIC_DEFAULT_MODEL": "prod-reasoner"})
        fake.fail(lambda body: True, 404, body=NOT_FOUND_404, times=None)
        unanswered = await asyncio.to_thread(cli, "doctor", env={
            "DIALECTIC_DEFAULT_MODEL": "prod-thinker"})
    assert done.returncode == 0, done.stdout
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("prod-reasoner")]
    assert "answered as o1-2024-12-17" in line
    assert "priced as o1-2024-12-17, which answers for it: price known: $15 in" in line
    (line,) = [x for x in unanswered.stdout.splitlines() if x.startswith("prod-thinker")]
    assert ("price unknown and never answered here: priced as o1 (pessimistic, with its "
            "reasoning allowance) until it answers") in line
