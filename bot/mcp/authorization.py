"""`/mcp` as an OAuth 2.1 resource server, by MCP's authorization rules for HTTP transports
(docs/mcp.md "Signing in with your identity provider").

With `DIALECTIC_MCP_AUTHORIZATION_SERVERS` naming the team's identity provider(s) (issuer URLs:
Okta, Entra ID, Auth0, Keycloak…), `/mcp` accepts that provider's signed access tokens beside the
API token and reviewer tokens:

- discovery: `/.well-known/oauth-protected-resource/mcp` (RFC 9728, the SDK's own model) names the
  resource, its authorization servers and scopes; every 401 from `/mcp` says where it is in
  `WWW-Authenticate: Bearer resource_metadata="…"`, so a client finds the provider from a refusal;
- validation: the token is a JWT signed by a key of the issuer's JWKS (found through its RFC 8414
  or OpenID Connect metadata, refreshed when an unknown key id arrives), issued by a configured
  issuer, for this resource (`aud`, RFC 8707: `DIALECTIC_MCP_AUDIENCE`, else the public URL's
  `/mcp`), unexpired; symmetric algorithms and `none` are refused. Tokens are never passed on;
- scopes: `dialectic:debate` opens every tool, `dialectic:read` the reading tools alone (as a
  reviewer's token does); a valid token with neither is a 403 `insufficient_scope`.

Without an authorization server nothing here runs: `/mcp` takes the API token and reviewer tokens
as before, and serves no metadata (RFC 9728 needs an authorization server to name)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import jwt

from bot.service.grants import BearerRefusal, Identity, Scope

log = logging.getLogger("dialectic.mcp")

READ_SCOPE = "dialectic:read"
DEBATE_SCOPE = "dialectic:debate"
SCOPES = (DEBATE_SCOPE, READ_SCOPE)
METADATA_PATH = "/.well-known/oauth-protected-resource"
#: Asymmetric algorithms only: a shared-secret (HS*) or unsigned token proves nothing here.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
              "EdDSA")
#: How long an issuer's metadata and keys are kept, and how soon an unknown key id may refetch.
KEYS_TTL = 600.0
REFETCH_AFTER = 30.0
LEEWAY = 30   # seconds of clock skew allowed on exp/nbf/iat
FETCH_TIMEOUT = aiohttp.ClientTimeout(total=10)


def well_known_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be: RFC 8414's (the well-known part inserted before the
    issuer's path), then OpenID Connect Discovery's (appended, and inserted)."""
    parts = urlsplit(issuer.rstrip("/"))
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path
    found = [f"{origin}/.well-known/oauth-authorization-server{path}",
             f"{origin}{path}/.well-known/openid-configuration"]
    if path:
        found.append(f"{origin}/.well-known/openid-configuration{path}")
    return tuple(found)


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """`scope` (RFC 9068: space-separated) or `scp` (Okta, Entra ID: a list or a string)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(str(v) for v in value)
    return frozenset(found)


class _Issuer:
    """One authorization server's signing keys, fetched from its metadata and kept a while."""

    def __init__(self, issuer: str, clock: Callable[[], float]) -> None:
        self.issuer = issuer
        self.clock = clock
        self.keys: jwt.PyJWKSet | None = None
        self.fetched_at = float("-inf")
        self.lock = asyncio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        async with self.lock:
            stale = self.clock() - self.fetched_at > KEYS_TTL
            if self.keys is None or stale or (
                    _find(self.keys, kid) is None
                    and self.clock() - self.fetched_at > REFETCH_AFTER):
                await self._fetch()
            return None if self.keys is None else _find(self.keys, kid)

    async def _fetch(self) -> None:
        self.fetched_at = self.clock()
        try:
            async with aiohttp.ClientSession(timeout=FETCH_TIMEOUT) as http:
                jwks_uri = await self._jwks_uri(http)
                async with http.get(jwks_uri) as answer:
                    answer.raise_for_status()
                    self.keys = jwt.PyJWKSet.from_dict(await answer.json(content_type=None))
        except (aiohttp.ClientError, TimeoutError, ValueError, jwt.PyJWKError) as exc:
            log.warning("MCP sign-in: could not read the signing keys of %s (%s: %s); tokens "
                        "it issued are refused until it answers", self.issuer,
                        type(exc).__name__, exc)

    async def _jwks_uri(self, http: aiohttp.ClientSession) -> str:
        for url in well_known_urls(self.issuer):
            async with http.get(url) as answer:
                if answer.status != 200:
                    continue
                meta = await answer.json(content_type=None)
            if isinstance(meta, dict) and isinstance(meta.get("jwks_uri"), str):
                if meta.get("issuer", self.issuer).rstrip("/") != self.issuer.rstrip("/"):
                    raise ValueError(f"its metadata names another issuer, {meta.get('issuer')!r}")
                return str(meta["jwks_uri"])
        raise ValueError("no authorization-server or OpenID metadata with a jwks_uri")


def _find(keys: jwt.PyJWKSet, kid: str | None) -> jwt.PyJWK | None:
    candidates = [k for k in keys.keys if kid is None or k.key_id == kid]
    return candidates[0] if len(candidates) == 1 or (kid and candidates) else None


class ResourceServer:
    """`/mcp`'s OAuth side: its metadata, its challenges, and the check of a provider's token."""

    def __init__(self, *, issuers: tuple[str, ...], resource: str, audience: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.resource = resource
        self.audience = audience
        self.issuers = {i.rstrip("/"): _Issuer(i.rstrip("/"), clock) for i in issuers}
        self.origin_issuers = issuers

    def metadata_url(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path}"

    def metadata(self) -> dict[str, Any]:
        """RFC 9728's document, built and checked by the SDK's model."""
        from mcp.shared.auth import ProtectedResourceMetadata

        document = ProtectedResourceMetadata.model_validate({
            "resource": self.resource, "authorization_servers": list(self.origin_issuers),
            "scopes_supported": list(SCOPES), "bearer_methods_supported": ["header"],
            "resource_name": "Dialectic"})
        return document.model_dump(mode="json", exclude_none=True)

    def challenge(self, refusal: BearerRefusal | None = None) -> str:
        """`WWW-Authenticate` for a 401 or 403 from `/mcp` (RFC 6750 §3, RFC 9728 §5.1)."""
        value = (f'Bearer resource_metadata="{self.metadata_url()}", '
                 f'scope="{" ".join(SCOPES)}"')
        if refusal is not None:
            description = refusal.description.replace('"', "'")
            value += f', error="{refusal.error}", error_description="{description}"'
        return value

    async def verify(self, token: str) -> Identity | BearerRefusal:
        """Who a provider's access token names (scope FULL or REVIEW), or why it is refused."""
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return BearerRefusal(401, "invalid_token", "not a token this server accepts")
        issuer = self.issuers.get(str(unverified.get("iss", "")).rstrip("/"))
        if issuer is None or header.get("alg") not in ALGORITHMS:
            return BearerRefusal(401, "invalid_token",
                                 "not issued by an authorization server this server trusts")
        key = await issuer.key(header.get("kid"))
        if key is None:
            return BearerRefusal(401, "invalid_token", "signed with a key the issuer does not list")
        try:
            claims = jwt.decode(token, key=key, algorithms=[str(header["alg"])],
                                audience=self.audience, issuer=str(unverified["iss"]),
                                leeway=LEEWAY, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            return BearerRefusal(401, "invalid_token", "the token has expired")
        except jwt.InvalidAudienceError:
            return BearerRefusal(401, "invalid_token",
                                 f"the token is not for this resource ({self.audience})")
        except jwt.PyJWTError as exc:
            return BearerRefusal(401, "invalid_token", f"the token is invalid ({exc})")
        return self._identity(claims)

    @staticmethod
    def _identity(claims: Mapping[str, Any]) -> Identity | BearerRefusal:
        scopes = _scopes(claims)
        if DEBATE_SCOPE in scopes:
            scope = Scope.FULL
        elif READ_SCOPE in scopes:
            scope = Scope.REVIEW
        else:
            return BearerRefusal(403, "insufficient_scope",
                                 f"the token grants neither {DEBATE_SCOPE} nor {READ_SCOPE}")
        who = str(claims.get("sub") or claims.get("client_id") or claims.get("azp") or "")
        return Identity(user=who, expires_at=float(claims["exp"]), via="oauth", scope=scope)


def resource_server(*, issuers: tuple[str, ...], audience: str, public_url: str
                    ) -> ResourceServer | None:
    """The resource server the settings describe; None when no authorization server is named."""
    if not issuers:
        return None
    resource = public_url.rstrip("/") + "/mcp"
    return ResourceServer(issuers=issuers, resource=resource, audience=audience or resource)


__all__ = ["DEBATE_SCOPE", "METADATA_PATH", "READ_SCOPE", "ResourceServer", "resource_server",
           "well_known_urls"]
