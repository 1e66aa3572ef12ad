"""`dialectic mcp` as an assistant runs it: `python -m bot mcp` spawned by the SDK's own client
over stdio, against the fake OpenAI-compatible server and a new SQLite database. The assistant
lists the tools, estimates, starts a debate, waits for it (hearing progress), reads it, its result
and transcript resources, and the prompt; in a process whose daily budget has no room, starting
one is a tool error saying so, and nothing is queued; with `--workers 0`, a `dialectic worker`
on the same database runs what it starts; without the SDK installed, the command says what to
install in one line."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio._core._subprocesses  # noqa: F401  # see below
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, Implementation, TextContent, TextResourceContents

from bot.processes import MCP_MISSING
from tests.fakes.openai_server import FakeOpenAI
from tests.support.served_process import serve_env

pytestmark = pytest.mark.integration
# The SDK's stdio client opens its process through anyio, which imports its subprocess module on
# first use; anyio is a pytest plugin, so that import is assertion-rewritten, and on CPython 3.11.7
# compiling it mid-run sometimes fails ("SystemError: AST constructor recursion depth mismatch",
# an interpreter bug fixed in later releases). Imported above, at collection, it never is.

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"estimate_debate", "start_debate", "get_debate", "list_debates", "wait_for_debate",
         "evaluate"}
TOPIC = "Should we move billing to PostgreSQL?"


@asynccontextmanager
async def assistant(tmp_path: Path, base_url: str, *args: str, **settings: str
                    ) -> AsyncIterator[Client]:
    """The SDK's client, with `dialectic mcp ARGS` as its stdio server (its log in tmp_path)."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp", *args],
                                   env=_env(tmp_path, base_url, **settings), cwd=str(ROOT))
    with (tmp_path / "mcp.log").open("w") as log:
        async with Client(stdio_client(server, errlog=log), read_timeout_seconds=120,
                          client_info=Implementation(name="acceptance", version="1")) as client:
            yield client


def _env(tmp_path: Path, base_url: str, **settings: str) -> dict[str, str]:
    return serve_env(f"sqlite+aiosqlite:///{tmp_path / 'mcp.db'}", base_url,
                     DIALECTIC_POLL_INTERVAL="0.05", **settings)


def _structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def _text(result: CallToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_an_assistant_estimates_starts_follows_and_reads_a_debate(tmp_path: Path) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with FakeOpenAI() as fake, assistant(tmp_path, fake.base_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        estimate = _structured(await client.call_tool(
            "estimate_debate", {"topic": TOPIC, "mode": "structured"}))
        started = _structured(await client.call_tool(
            "start_debate", {"topic": TOPIC, "mode": "structured", "context": "We run MySQL."}))
        done = _structured(await client.call_tool(
            "wait_for_debate", {"debate_id": started["id"], "timeout_seconds": 90},
            progress_callback=progress))
        got = _structured(await client.call_tool("get_debate", {"debate_id": started["id"]}))
        listed = _structured(await client.call_tool("list_debates", {}))
        record = await client.read_resource(started["links"]["result"])
        transcript = await client.read_resource(started["links"]["transcript"])
        prompt = await client.get_prompt("debate_this_decision", {"decision": TOPIC})
        answered = fake.answered()
    assert set(tools) == TOOLS and all(t.output_schema for t in tools.values())
    assert estimate["admitted"] and estimate["usd_high"] > 0 and not estimate["rehearsal"]
    assert started["status"] == "queued" and started["estimate"]["mode"] == "structured"
    assert done["settled"] and done["result"]["headline"], done
    assert got["result"] == done["result"] and got["status"] == done["status"]
    assert heard and heard[-1][0] == heard[-1][1] == len(done["phases"])
    assert [d["id"] for d in listed["debates"]] == [started["id"]]
    stored = record.contents[0]
    assert isinstance(stored, TextResourceContents)
    assert json.loads(stored.text)["requested_by"] == "mcp:acceptance"
    assert json.loads(stored.text)["origin"]["surface"] == "mcp"
    text = transcript.contents[0]
    assert isinstance(text, TextResourceContents)
    assert text.text.startswith(f"# {TOPIC}") and done["result"]["headline"] in text.text
    assert TOPIC in str(prompt.messages[0].content)
    assert answered > 0   # the debate was argued by the provider, in the MCP process's worker


async def test_a_budget_with_no_room_refuses_the_debate_as_a_tool_error(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake, assistant(tmp_path, fake.base_url,
                                               DIALECTIC_DAILY_BUDGET_USD="0.0001") as client:
        estimate = _structured(await client.call_tool(
            "estimate_debate", {"topic": TOPIC, "mode": "simple"}))
        refused = await client.call_tool("start_debate", {"topic": TOPIC, "mode": "simple"})
        listed = _structured(await client.call_tool("list_debates", {}))
    assert not estimate["admitted"] and estimate["refusal"].startswith("today's budget has")
    assert refused.is_error and "\n" not in _text(refused)
    assert _text(refused).endswith(estimate["refusal"])
    assert listed["debates"] == [] and fake.count() == 0



async def test_without_workers_a_worker_process_on_the_same_database_runs_its_debates(
        tmp_path: Path) -> None:
    async with FakeOpenAI() as fake, assistant(tmp_path, fake.base_url, "--workers", "0"
                                               ) as client:
        started = _structured(await client.call_tool(
            "start_debate", {"topic": TOPIC, "mode": "simple"}))
        waiting = _structured(await client.call_tool(
            "wait_for_debate", {"debate_id": started["id"], "timeout_seconds": 1}))
        with (tmp_path / "worker.log").open("w") as log:
            worker = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "worker", env=_env(tmp_path, fake.base_url),
                cwd=ROOT, stdout=log, stderr=log)
            try:
                done = _structured(await client.call_tool(
                    "wait_for_debate", {"debate_id": started["id"], "timeout_seconds": 90}))
            finally:
                worker.send_signal(signal.SIGTERM)
                await asyncio.wait_for(worker.wait(), 60)
    assert not waiting["settled"] and waiting["status"] == "queued"   # nobody runs it here
    assert done["settled"] and done["result"]["headline"], done


async def test_without_the_mcp_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    hide_sdk = ("import sys; sys.modules['mcp'] = None; from bot.main import command; "
                "sys.exit(command())")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", hide_sdk, "mcp", env=_env(tmp_path, "http://127.0.0.1:9/v1"),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2 and out == b""   # stdout is the protocol's, even now
    assert err.decode().strip() == f"error: {MCP_MISSING}"
