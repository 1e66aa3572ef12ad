"""Who may use the HTTP surface, decided in one place for the API and the console.

Without `DIALECTIC_API_TOKEN` everything is open (the server then binds to loopback only, see
server.check_exposure). With it, `/api/...` needs `Authorization: Bearer <token>` or the console's
cookie; console pages need the cookie (set once from `/?token=...`) or, for one transcript, the
signature Slack's link carries.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from bot.http.errors import error
from bot.http.routes import Handler
from bot.http.state import RUNTIME
from bot.service.links import transcript_signature
from bot.service.runtime import Runtime

COOKIE = "dialectic_token"


def needs_token(path: str) -> bool:
    """Paths the middleware guards with the token (the console guards its pages itself)."""
    return path.startswith("/api/")


def secret_of(rt: Runtime) -> str | None:
    token = rt.settings.api_token
    return None if token is None else token.get_secret_value()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _has_cookie(request: web.Request, secret: str) -> bool:
    return _same(request.cookies.get(COOKIE, ""), secret)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not needs_token(request.path):
        return await handler(request)
    sent = request.headers.get("Authorization", "")
    if not (_same(sent, f"Bearer {secret}") or _has_cookie(request, secret)):
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    return await handler(request)


def console_allowed(request: web.Request, *, debate_id: str | None = None,
                    signature: str = "") -> bool:
    """May this browser see the console (or, with Slack's `signature`, this one transcript)?"""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or _has_cookie(request, secret):
        return True
    return debate_id is not None and _same(signature, transcript_signature(secret, debate_id))


def console_login(request: web.Request, token: str | None) -> web.HTTPFound | None:
    """`/?token=<the API token>`: a redirect to `/` that sets the console's cookie; None when
    the token is absent or wrong."""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not token or not _same(token, secret):
        return None
    found = web.HTTPFound("/")
    found.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
    return found
