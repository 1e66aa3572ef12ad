"""Every variable of docs/configuration.md's operator table, set at once as an operator sets them,
and `dialectic serve` as its own process: it starts, `/healthz` tells the truth, a debate over
the API runs on the configured provider and model, and a signed `/debate` from Slack is answered
with the bot token (the sign-in variables set beside it); docs/tracing.md's OTEL_* variables
export to a loopback OTLP receiver. A variable added to that table (`COMMON` in
tests/support/setting_meanings.py) without a value here fails the test."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

from tests.acceptance.test_deployment import (
    configuration_variables,
    tracing_variables,
)
from tests.acceptance.test_tracing_export import Receiver, attrs
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack
from tests.support.pg_server import free_port
from tests.support.served_process import ServedProcess, serve_env
from tests.support.slack_fixtures import CHANNEL, TEAM, USER, sign

pytestmark = pytest.mark.integration   # a whole process with both fakes on loopback

TOKEN = secrets.token_urlsafe(32)
SIGNING_SECRET = "secret"   # tests.support.slack_fixtures.sign's


def every_variable(tmp_path: Path, port: int, openai: str, slack: str) -> dict[str, str]:
    """A production-like value for each variable, none of them its default."""
    return {
        "OPENAI_API_KEY": "sk-test-every-variable", "OPENAI_BASE_URL": openai,
        "DIALECTIC_DEFAULT_MODEL": "gpt-5-mini", "DIALECTIC_REASONING_EFFORT": "minimal",
        "DIALECTIC_REASONING_EFFORTS": "judge=medium", "DIALECTIC_OUTPUT_MODE": "json_schema",
        "DIALECTIC_PROVIDER_KIND": "openai", "DIALECTIC_OVERLOAD_WAIT": "5",
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'db' / 'dialectic.db'}",
        "DIALECTIC_DATA_DIR": str(tmp_path / "data"),
        "DIALECTIC_DAILY_BUDGET_USD": "25", "DIALECTIC_MAX_DEBATE_USD": "2",
        "DIALECTIC_CALL_TIMEOUT": "45", "DIALECTIC_READ_TIMEOUT": "40",
        "DIALECTIC_PHASE_TIMEOUT": "90",
        "DIALECTIC_DEBATE_TIMEOUT": "280", "DIALECTIC_MAX_RETRIES": "2",
        "DIALECTIC_BACKOFF_BASE": "0.05", "DIALECTIC_BACKOFF_CAP": "0.2",
        "DIALECTIC_CIRCUIT_FAILURES": "4", "DIALECTIC_CIRCUIT_COOLDOWN": "20",
        "DIALECTIC_CACHE_TTL_SECONDS": "600", "DIALECTIC_LEASE_SECONDS": "40",
        "DIALECTIC_WORKER_CONCURRENCY": "3", "DIALECTIC_SPOT_CHECK_FRACTION": "0.1",
        "DIALECTIC_AUDIT_WINDOW_DAYS": "60", "DIALECTIC_ALLOW_PRIVATE_SOURCES": "true",
        "DIALECTIC_HOST": "127.0.0.1", "DIALECTIC_PORT": str(port),
        "DIALECTIC_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "DIALECTIC_ALLOWED_HOSTS": "dialectic.internal,localhost",
        "DIALECTIC_API_TOKEN": TOKEN, "DIALECTIC_LINK_TTL_DAYS": "3",
        "DIALECTIC_MCP_AUTHORIZATION_SERVERS": "https://idp.example/tenant",
        "DIALECTIC_MCP_AUDIENCE": "api://dialectic",
        "DIALECTIC_TOKEN_KEYS": "ZXZlcnktdmFyaWFibGUtdGVzdC1rZXktMzItYnl0ZXM=",
        "DIALECTIC_UNINSTALL_DATA": "purge",
        "DIALECTIC_CONSOLE_SESSION_HOURS": "8", "DIALECTIC_LOG_LEVEL": "INFO",
        "DIALECTIC_IDLE_TIMEOUT_SECONDS": "20", "DIALECTIC_BODY_TIMEOUT_SECONDS": "20",
        "DIALECTIC_SSE_PER_CLIENT": "4", "DIALECTIC_SSE_GLOBAL": "50",
        "DIALECTIC_SSE_HEARTBEAT_SECONDS": "10", "DIALECTIC_SSE_MAX_SECONDS": "300",
        "DIALECTIC_REVIEWERS": "<@U0REVIEWER> S0REVIEWERS", "DIALECTIC_REVIEW_CHANNEL": "C0REVIEW",
        "SLACK_BOT_TOKEN": "xoxb-every-variable", "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack, "SLACK_CLIENT_ID": "1234567890.0987654321",
        "SLACK_CLIENT_SECRET": "client-secret-for-sign-in",
        "SLACK_APP_TOKEN": "xapp-1-A0FAKE-every-variable", "DIALECTIC_SLACK_STREAMING": "off",
        "DIALECTIC_SLACK_STATUS_REFRESH": "60",
    }


OTLP_SECRET = "otlp-every-variable-key"


def every_tracing_variable(receiver: str) -> dict[str, str]:
    """A value for each variable of docs/tracing.md's table, exporting to `receiver`
    (loopback: nothing leaves the machine)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{OTLP_SECRET}",
        "OTEL_SERVICE_NAME": "dialectic-every",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=every-variable",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.0",
        "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "64",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }


def _covers(values: dict[str, str], documented: set[str]) -> bool:
    """Each documented name is set (a family `X_*` by at least one member), nothing else."""
    families = [n[:-1] for n in documented if n.endswith("*")]
    exact = {n for n in documented if not n.endswith("*")}
    return (exact <= set(values) and all(any(v.startswith(f) for v in values) for f in families)
            and all(v in exact or any(v.startswith(f) for f in families) for v in values))


def _assert_traced(receiver: Receiver, log: str) -> None:
    """What the tracing variables asked for arrived: the service's name and resource, the
    header, the captured content; no secret in any span nor in the log."""
    resources = [r for r, _ in receiver.spans]
    assert {r.get("service.name") for r in resources} == {"dialectic-every"}
    assert {r.get("deployment.environment.name") for r in resources} == {"every-variable"}
    assert {h.get("authorization") for h in receiver.headers} == {f"Bearer {OTLP_SECRET}"}
    chats = receiver.named("chat ")
    assert chats and all("gen_ai.input.messages" in attrs(c) for c in chats)
    exported = repr([attrs(s) for _, s in receiver.spans])
    assert "sk-test-every-variable" not in exported and TOKEN not in exported
    assert OTLP_SECRET not in log


async def _finished(server: ServedProcess, debate_id: str) -> dict[str, object]:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with asyncio.timeout(90):
        while True:
            status, record = await server.call("GET", f"/api/debates/{debate_id}", headers=auth)
            assert status == 200, record
            if record["result"] is not None:
                return record
            await asyncio.sleep(0.2)


async def _healthy_with_slack(server: ServedProcess) -> dict[str, object]:
    async with asyncio.timeout(30):
        while True:
            status, health = await server.get("/healthz")
            assert status == 200, (health, server.log())
            if health["slack"] is True:
                return dict(health)
            await asyncio.sleep(0.1)


async def test_serve_with_every_documented_variable_set_at_once(tmp_path: Path) -> None:
    port = free_port()
    async with FakeOpenAI() as openai, FakeSlack() as slack, Receiver() as receiver:
        values = every_variable(tmp_path, port, openai.base_url, slack.base_url)
        assert set(values) == configuration_variables()
        tracing = every_tracing_variable(receiver.url)
        assert _covers(tracing, tracing_variables())
        server = ServedProcess(serve_env(values["DATABASE_URL"], openai.base_url, **values,
                                         **tracing), tmp_path / "serve.log", port=port)
        await server.start()
        try:
            health = await _healthy_with_slack(server)
            assert health["rehearsal"] is False and health["slack_problem"] is None
            assert slack.socket_mode.greeted >= 1      # Socket Mode connected beside HTTP
            auth = {"Authorization": f"Bearer {TOKEN}"}
            status, body = await server.call(
                "POST", "/api/debates", headers=auth,
                json={"topic": "Should we move billing to PostgreSQL?", "mode": "simple"})
            assert status == 202, body
            record = await _finished(server, body["id"])
            assert record["result"]["rehearsal"] is False
            assert {r.body["model"] for r in openai.requests} == {"gpt-5-mini"}
            command = urlencode({"team_id": TEAM, "channel_id": CHANNEL, "user_id": USER,
                                 "command": "/debate", "text": "Adopt Kafka for the event bus",
                                 "response_url": slack.response_url("every"),
                                 "trigger_id": "trigger.every", "api_app_id": "A0FAKE"})
            async with aiohttp.ClientSession() as s, s.post(
                    f"{server.base}/slack/events", data=command.encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded",
                             **sign(command, secret=SIGNING_SECRET)}) as reply:
                text = await reply.text()
            assert reply.status == 200 and "Estimate" in text, (text, server.log())
            assert "install" not in text.lower()
            assert TOKEN not in server.log() and "client-secret-for-sign-in" not in server.log()
        finally:
            assert await server.terminate() == 0, server.log()
        _assert_traced(receiver, server.log())  # `serve` flushed its spans as it stopped


async def test_a_refused_app_token_leaves_the_service_serving_and_says_why(
        tmp_path: Path) -> None:
    """Slack refusing Socket Mode's token (revoked, mistyped) does not stop the API, the console
    or Slack over HTTP; `/healthz` says Slack is unreachable and why; the log says it once."""
    port = free_port()
    async with FakeOpenAI() as openai, FakeSlack() as slack:
        slack.socket_mode.refuse("invalid_auth")
        values = every_variable(tmp_path, port, openai.base_url, slack.base_url)
        server = ServedProcess(serve_env(values["DATABASE_URL"], openai.base_url, **values),
                               tmp_path / "serve.log", port=port)
        await server.start()
        try:
            async with asyncio.timeout(30):
                while (await server.get("/healthz"))[1]["slack_problem"] in (
                        None, "Socket Mode: connecting"):
                    await asyncio.sleep(0.1)
            status, health = await server.get("/healthz")
            assert status == 200 and health["ok"] is True and health["slack"] is False
            assert health["slack_problem"] == "Socket Mode cannot connect: invalid_auth"
            status, body = await server.call(
                "POST", "/api/estimate", headers={"Authorization": f"Bearer {TOKEN}"},
                json={"topic": "Should we move billing to PostgreSQL?"})
            assert status == 200, body
        finally:
            assert await server.terminate() == 0, server.log()
    said = [line for line in server.log().splitlines() if "invalid_auth" in line]
    assert said == [said[0]] and "Traceback" not in server.log(), server.log()
    assert said[0].endswith("Slack Socket Mode cannot connect: invalid_auth; retrying every 10 s")
