"""MCP over streamable HTTP at `/mcp` on the served application, through the SDK's own HTTP
client: with the API token as the bearer an assistant starts a debate and waits for it (hearing
progress; the audit names it); without the token, or with a wrong one, `/mcp` answers 401 and
nothing is started; a reviewer's token (which reads debates and decides reviews) gets the
reading tools alone."""

from __future__ import annotations

from typing import Any

import aiohttp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

from bot.service.grants import reviewer_grant
from storage.db import Database
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "mcp-test-token"
REVIEWER = "U0REVIEWER"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "intruder", "version": "1"}}}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_an_assistant_with_the_api_token_starts_and_follows_a_debate_over_http(
        sqlite_db: Database) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    settings = rehearsal_settings(api_token=TOKEN)
    async with served(sqlite_db, settings, workers=2) as (base, rt, _):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        transport = streamable_http_client(base.rstrip("/") + "/mcp", http_client=http)
        async with Client(transport, client_info=Implementation(name="remote", version="1")
                          ) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            started = await client.call_tool("start_debate", {"topic": "Adopt Rust?",
                                                              "mode": "simple"})
            assert started.structured_content is not None, started.content
            debate_id = started.structured_content["id"]
            done = await client.call_tool("wait_for_debate", {
                "debate_id": debate_id, "timeout_seconds": 60}, progress_callback=progress)
        record = await rt.service.get(debate_id)
    assert "wait_for_debate" in tools
    assert done.structured_content is not None and done.structured_content["settled"]
    assert heard and heard[-1][0] == heard[-1][1]
    assert record.requested_by == "mcp:remote" and record.origin.surface == "mcp"


async def test_mcp_over_http_needs_the_api_token(sqlite_db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN)
    async with served(sqlite_db, settings, workers=0) as (base, rt, _), \
            aiohttp.ClientSession() as session:
        answers: list[tuple[int, Any]] = []
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            async with session.post(base.rstrip("/") + "/mcp", json=INITIALIZE,
                                    headers={**headers, **MCP_ACCEPT}) as response:
                answers.append((response.status, await response.json()))
        debates = await rt.service.recent()
    assert [status for status, _ in answers] == [401, 401]
    assert all("bearer token" in body["error"] for _, body in answers)
    assert debates == []


async def test_a_reviewers_token_gets_the_reading_tools_alone(sqlite_db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER)
    reviewer = reviewer_grant(settings.service, REVIEWER)
    async with served(sqlite_db, settings, workers=0) as (base, rt, _):
        for bearer in (TOKEN, reviewer):   # the operator's server first: both are served
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
            transport = streamable_http_client(base.rstrip("/") + "/mcp", http_client=http)
            async with Client(transport) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                started = await client.call_tool("start_debate", {"topic": "Adopt Rust?"})
        debates = await rt.service.recent()
    assert tools == {"get_debate", "list_debates", "wait_for_debate"}
    assert started.is_error and len(debates) == 1   # the operator's one, not the reviewer's
