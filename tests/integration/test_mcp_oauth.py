"""`/mcp` signed in by a team's identity provider, by MCP's authorization rules for HTTP: the SDK's
own OAuth client, knowing nothing but the server's URL, finds the provider from the 401's
`resource_metadata`, registers, authorizes with PKCE for this resource and starts a debate with
the token it got; tokens for another resource, expired, forged, from another issuer or without
the scope are refused with RFC 6750's error in `WWW-Authenticate` and start nothing; a read scope
gets the reading tools alone; the API token still opens everything."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import ValidationError

from bot.http.server import check_exposure
from bot.mcp.authorization import _Issuer, well_known_urls
from bot.service.runtime import Runtime
from engine.errors import ConfigurationError
from storage.db import Database
from tests.fakes.identity_provider import FakeIdentityProvider, identity_provider
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "mcp-api-token"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "intruder", "version": "1"}}}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
READING_TOOLS = {"get_debate", "list_debates", "wait_for_debate"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _oauth(server_url: str) -> OAuthClientProvider:
    """The SDK's OAuth client; the browser's round trip done by following the provider's
    redirect to read the code from it."""
    answer: dict[str, str] = {}

    async def redirect(url: str) -> None:
        async with httpx2.AsyncClient() as http:
            location = (await http.get(url)).headers["location"]
        query = parse_qs(urlsplit(location).query)
        answer.update(code=query["code"][0], state=query["state"][0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answer["code"], state=answer["state"])

    metadata = OAuthClientMetadata(
        redirect_uris=["http://127.0.0.1:9/callback"], client_name="desk-assistant",
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="none", scope="dialectic:debate")
    return OAuthClientProvider(server_url=server_url, client_metadata=metadata, storage=_Memory(),
                               redirect_handler=redirect, callback_handler=callback)


@asynccontextmanager
async def _guarded(db: Database, *, workers: int = 0
                   ) -> AsyncIterator[tuple[str, FakeIdentityProvider, Runtime]]:
    """(base URL, identity provider, runtime): a served app whose /mcp trusts `idp`, its public
    URL the address it listens on (so discovery leads back to it)."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    async with identity_provider() as idp:
        settings = rehearsal_settings(api_token=TOKEN, public_url=base,
                                      mcp_authorization_servers=idp.issuer)
        async with served(db, settings, workers=workers, port=port) as (_, rt, _app):
            yield base, idp, rt


async def test_an_assistant_signs_in_through_the_identity_provider_it_discovers(
        sqlite_db: Database) -> None:
    async with _guarded(sqlite_db, workers=1) as (base, idp, rt):
        http = create_mcp_http_client(auth=_oauth(f"{base}/mcp"))
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            started = await client.call_tool("start_debate", {"topic": "Adopt Rust?",
                                                              "mode": "simple"})
        assert started.structured_content is not None, started.content
        record = await rt.service.get(started.structured_content["id"])
    assert "start_debate" in tools
    assert [r["client_name"] for r in idp.registered] == ["desk-assistant"]
    assert idp.issued == [{"resource": f"{base}/mcp", "scope": "dialectic:debate"}]
    assert record.origin.surface == "mcp"


async def _post(session: aiohttp.ClientSession, url: str, token: str | None
                ) -> tuple[int, str, dict[str, Any]]:
    headers = {**MCP_ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with session.post(url, json=INITIALIZE, headers=headers) as response:
        return (response.status, response.headers.get("WWW-Authenticate", ""),
                await response.json(content_type=None))


async def test_tokens_a_resource_server_must_refuse_are_refused_saying_why(
        sqlite_db: Database) -> None:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    async with _guarded(sqlite_db) as (base, idp, rt), aiohttp.ClientSession() as session:
        cases = {
            "none": (None, 401, None, "sign in"),
            "another resource": (idp.mint(audience="https://elsewhere.example/mcp"), 401,
                                 "invalid_token", "not for this resource"),
            "expired": (idp.mint(audience=f"{base}/mcp", expires_in=-3600), 401,
                        "invalid_token", "expired"),
            "forged": (idp.mint(audience=f"{base}/mcp", key=other_key), 401, "invalid_token",
                       "invalid"),
            "another issuer": (idp.mint(audience=f"{base}/mcp", issuer="https://evil.example"),
                               401, "invalid_token", "trusts"),
            "no scope": (idp.mint(audience=f"{base}/mcp", scope="email"), 403,
                         "insufficient_scope", "neither"),
            "garbage": ("not-a-jwt", 401, "invalid_token", "not a token"),
        }
        answers = {name: await _post(session, f"{base}/mcp", token)
                   for name, (token, *_rest) in cases.items()}
        async with session.get(f"{base}/.well-known/oauth-protected-resource/mcp") as got:
            document = await got.json()
        debates = await rt.service.recent()
    for name, (_token, status, code, words) in cases.items():
        got_status, challenge, body = answers[name]
        assert got_status == status, (name, body)
        assert words in body["error"], (name, body)
        assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' \
            in challenge, name
        assert (f'error="{code}"' in challenge) if code else ("error=" not in challenge), name
    assert document["resource"] == f"{base}/mcp"
    assert document["authorization_servers"] == [idp.issuer]
    assert set(document["scopes_supported"]) == {"dialectic:debate", "dialectic:read"}
    assert debates == []


async def test_a_read_scope_gets_the_reading_tools_and_the_api_token_still_opens_all(
        sqlite_db: Database) -> None:
    found: dict[str, set[str]] = {}
    async with _guarded(sqlite_db) as (base, idp, _rt):
        for name, bearer in (("api token", TOKEN),
                             ("read scope", idp.mint(audience=f"{base}/mcp",
                                                     scope="openid dialectic:read"))):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport) as client:
                found[name] = {t.name for t in (await client.list_tools()).tools}
    assert "start_debate" in found["api token"]
    assert READING_TOOLS <= found["read scope"] and "start_debate" not in found["read scope"]


async def test_a_rotated_key_is_fetched_once_the_refetch_pause_has_passed() -> None:
    now = [1000.0]
    async with identity_provider() as idp:
        issuer = _Issuer(idp.issuer, clock=lambda: now[0])
        assert await issuer.key("key-1") is not None
        idp.key, idp.kid = rsa.generate_private_key(public_exponent=65537, key_size=2048), "key-2"
        now[0] += 5
        assert await issuer.key("key-2") is None          # no fetch storm on unknown key ids
        now[0] += 30
        assert await issuer.key("key-2") is not None      # the provider rotated: fetched again
    assert idp.jwks_reads == 2


def test_metadata_is_looked_for_where_rfc_8414_and_openid_connect_put_it() -> None:
    assert well_known_urls("https://idp.example/tenant/v2/") == (
        "https://idp.example/.well-known/oauth-authorization-server/tenant/v2",
        "https://idp.example/tenant/v2/.well-known/openid-configuration",
        "https://idp.example/.well-known/openid-configuration/tenant/v2")
    assert well_known_urls("https://idp.example") == (
        "https://idp.example/.well-known/oauth-authorization-server",
        "https://idp.example/.well-known/openid-configuration")


@pytest.mark.parametrize("issuer", ["http://idp.example", "https://idp.example/?x=1", "idp"])
def test_an_issuer_that_is_no_https_url_is_refused(issuer: str) -> None:
    with pytest.raises(ValidationError, match="no issuer URL"):
        rehearsal_settings(api_token=TOKEN, mcp_authorization_servers=issuer)


def test_serve_refuses_an_identity_provider_on_a_server_without_a_token() -> None:
    settings = rehearsal_settings(mcp_authorization_servers="https://idp.example")
    with pytest.raises(ConfigurationError, match="set DIALECTIC_API_TOKEN too"):
        check_exposure(settings.service, "127.0.0.1")
