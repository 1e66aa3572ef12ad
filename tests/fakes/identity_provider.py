"""A fake OAuth 2.1 authorization server on loopback, as an MCP client meets a team's identity
provider: RFC 8414 metadata, a JWKS, dynamic client registration (RFC 7591), an authorization
endpoint that approves at once (the person's consent is not what is under test) and a token
endpoint that checks PKCE (S256) and issues RS256 JWTs for the `resource` asked (RFC 8707).
`mint` makes tokens directly, for the cases a real provider would not issue."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives.asymmetric import rsa


@dataclass
class FakeIdentityProvider:
    """Its issuer URL (set once serving), its key, and what it was asked."""

    issuer: str = ""
    kid: str = "key-1"
    key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(
        public_exponent=65537, key_size=2048))
    scope: str = "dialectic:debate"           # what /authorize grants
    registered: list[dict[str, Any]] = field(default_factory=list)
    issued: list[dict[str, Any]] = field(default_factory=list)
    jwks_reads: int = 0
    codes: dict[str, dict[str, str]] = field(default_factory=dict)

    def mint(self, *, audience: str, scope: str = "dialectic:debate", expires_in: int = 600,
             issuer: str | None = None, key: rsa.RSAPrivateKey | None = None,
             kid: str | None = None, subject: str = "ana@example.com") -> str:
        now = int(time.time())
        claims = {"iss": issuer or self.issuer, "sub": subject, "aud": audience, "scope": scope,
                  "iat": now, "exp": now + expires_in, "client_id": "assistant"}
        return jwt.encode(claims, key or self.key, algorithm="RS256",
                          headers={"kid": kid or self.kid})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/oauth-authorization-server", self._metadata)
        app.router.add_get("/jwks", self._jwks)
        app.router.add_post("/register", self._register)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        return app

    async def _metadata(self, _: web.Request) -> web.Response:
        return web.json_response({
            "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            "scopes_supported": ["dialectic:debate", "dialectic:read"]})

    async def _jwks(self, _: web.Request) -> web.Response:
        self.jwks_reads += 1
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return web.json_response({"keys": [{**public, "kid": self.kid, "use": "sig",
                                            "alg": "RS256"}]})

    async def _register(self, request: web.Request) -> web.Response:
        asked = await request.json()
        self.registered.append(asked)
        return web.json_response({**asked, "client_id": f"client-{len(self.registered)}",
                                  "client_id_issued_at": int(time.time())}, status=201)

    async def _authorize(self, request: web.Request) -> web.Response:
        q = request.query
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"challenge": q["code_challenge"], "resource": q.get("resource", ""),
                            "redirect_uri": q["redirect_uri"]}
        target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        raise web.HTTPFound(target)

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        asked = self.codes.pop(str(form.get("code", "")), None)
        verifier = str(form.get("code_verifier", "")).encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if asked is None or challenge.decode() != asked["challenge"]:
            return web.json_response({"error": "invalid_grant"}, status=400)
        resource = str(form.get("resource") or asked["resource"])
        self.issued.append({"resource": resource, "scope": self.scope})
        token = self.mint(audience=resource, scope=self.scope)
        return web.json_response({"access_token": token, "token_type": "Bearer",
                                  "expires_in": 600, "scope": self.scope})


@asynccontextmanager
async def identity_provider() -> AsyncIterator[FakeIdentityProvider]:
    """A fake identity provider serving on a free loopback port."""
    idp = FakeIdentityProvider()
    server = TestServer(idp.app(), host="127.0.0.1", port=0)
    await server.start_server()
    idp.issuer = str(server.make_url("")).rstrip("/")
    try:
        yield idp
    finally:
        await server.close()
