"""Traces leave the process as an operator would see them (docs/tracing.md): `dialectic serve`
as its own process exports over OTLP/HTTP to a loopback receiver that decodes the protobuf
`ExportTraceServiceRequest`; a debate posted with a W3C `traceparent` is one trace from the
caller through the API request, the queue and the worker to each LLM call. With the variables
unset, `dialectic run` neither exports nor imports OpenTelemetry."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.openai_server import FakeOpenAI
from tests.support.served_process import ServedProcess, serve_env

pytestmark = pytest.mark.integration

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


class Receiver:
    """An OTLP/HTTP traces endpoint on loopback: every span it was sent, with its resource."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Any]] = []
        self.headers: list[dict[str, str]] = []   # of each export request
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/v1/traces", self.receive)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    async def receive(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        message = ExportTraceServiceRequest.FromString(await request.read())
        for resource_spans in message.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                self.spans += [(resource, span) for span in scope.spans]
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")

    def named(self, prefix: str) -> list[Any]:
        return [s for _, s in self.spans if s.name.startswith(prefix)]


def attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in span.attributes:
        value = a.value
        out[a.key] = getattr(value, value.WhichOneof("value"))
    return out


async def _until(check: Any, what: str) -> None:
    for _ in range(600):
        if check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


async def test_serve_exports_one_trace_from_the_callers_traceparent(tmp_path: Path) -> None:
    async with FakeOpenAI() as openai, Receiver() as receiver:
        env = serve_env(f"sqlite+aiosqlite:///{tmp_path / 'd.db'}", openai.base_url,
                        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="dialectic-t",
                        OTEL_BSP_SCHEDULE_DELAY="100", DIALECTIC_DATA_DIR=str(tmp_path))
        server = ServedProcess(env, tmp_path / "serve.log")
        await server.start()
        try:
            status, body = await server.call(
                "POST", "/api/debates", json={"topic": "Adopt Kafka?", "mode": "structured"},
                headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
            assert status == 202, body

            async def finished() -> bool:
                return (await server.get(f"/api/debates/{body['id']}"))[1]["status"] not in (
                    "queued", "debating", "judging")

            for _ in range(600):
                if await finished():
                    break
                await asyncio.sleep(0.1)
            await _until(lambda: receiver.named("invoke_workflow"), "the workflow span arrived")
        finally:
            assert await server.terminate() == 0
        log = server.log()
    polls = receiver.named("GET /api/debates/")  # our polling: traces of their own
    spans = [s for _, s in receiver.spans if s not in polls]
    assert polls and {s.trace_id.hex() for s in spans} == {TRACE_ID}, "one trace, the caller's"
    assert {r.get("service.name") for r, _ in receiver.spans} == {"dialectic-t"}
    [request] = receiver.named("POST /api/debates")
    [claim] = receiver.named("claim debate")
    [workflow] = receiver.named("invoke_workflow dialectic")
    assert request.parent_span_id.hex() == CALLER_SPAN
    assert claim.parent_span_id == request.span_id and not claim.links
    assert workflow.parent_span_id == claim.span_id
    assert attrs(workflow)["dialectic.debate.id"] == body["id"]
    assert attrs(request)["http.response.status_code"] == 202
    chats = receiver.named("chat ")
    assert chats and len(chats) == len(openai.requests)
    for chat in chats:
        a = attrs(chat)
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.usage.input_tokens"] > 0
        assert "gen_ai.input.messages" not in a
    assert f"trace_id={TRACE_ID}" in log


async def test_with_the_variables_unset_run_neither_exports_nor_imports_it(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "OPENAI_", "DIALECTIC_", "SLACK_", "DATABASE_"))}
    async with FakeOpenAI() as openai, Receiver() as receiver:
        env.update({"DIALECTIC_CONFIG": os.devnull, "DIALECTIC_DATA_DIR": str(tmp_path),
                    "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": openai.base_url,
                    "OTEL_SERVICE_NAME": "dialectic-t",   # no exporter nor endpoint: off
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces"})
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-X", "importtime", "-m", "bot", "run", "Adopt Kafka?", "--mode",
            "simple", "--json", env=env, cwd=tmp_path, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 120)
        assert process.returncode == 0, err.decode()[-2000:]
        assert openai.requests and not receiver.spans
    imported = [line for line in err.decode().splitlines() if "import time:" in line]
    assert any("engine.provider.gateway" in line for line in imported)
    assert not [line for line in imported if "opentelemetry" in line]
    assert b'"status": "completed"' in out
