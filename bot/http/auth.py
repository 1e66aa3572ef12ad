"""Who may use the HTTP surface, decided in one place for the API and the console.

Without `DIALECTIC_API_TOKEN` everything is open (the server then binds to loopback only, see
server.check_exposure). With it, `/api/...` needs `Authorization: Bearer <token>`, a reviewer
token (`dialectic reviewers link`) as the bearer, or the console's signed session cookie; console
pages need the session (begun from `/?token=...`, a reviewer link or Slack sign-in) or, for one
transcript, the signature Slack's link carries.

Deciding a review needs more than access: a reviewer's identity, from the session or a reviewer
token (`reviewer_of`). The API token alone names nobody.
"""

from __future__ import annotations

import hmac
import re

from aiohttp import web

from bot.http import session
from bot.http.errors import error
from bot.http.routes import Handler
from bot.http.state import RUNTIME
from bot.service.grants import Identity, Purpose, key_of, unseal
from bot.service.links import transcript_signature
from bot.service.runtime import Runtime

BEARER = "Bearer "
#: What a transcript link's signature also opens: the debate as JSON and its event stream.
SIGNED_READS = re.compile(r"/api/debates/([^/]+)(?:/events)?")


def needs_token(path: str) -> bool:
    """Paths the middleware guards with the token (the console guards its pages itself)."""
    return path.startswith("/api/")


def secret_of(rt: Runtime) -> str | None:
    token = rt.settings.api_token
    return None if token is None else token.get_secret_value()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def bearer_reviewer(request: web.Request) -> Identity | None:
    """The reviewer a reviewer token in `Authorization: Bearer …` names, if it is one."""
    sent = request.headers.get("Authorization", "")
    key = key_of(request.app[RUNTIME].settings)
    if key is None or not sent.startswith(BEARER):
        return None
    return unseal(key, Purpose.REVIEWER, sent[len(BEARER):].strip())


def reviewer_of(request: web.Request) -> str | None:
    """The reviewer acting: the session's signed-in person, or a reviewer token's."""
    found = session.current(request)
    if found is not None and found.user:
        return found.user
    grant = bearer_reviewer(request)
    return grant.user if grant is not None else None


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not needs_token(request.path):
        return await handler(request)
    sent = request.headers.get("Authorization", "")
    if not (_same(sent, f"{BEARER}{secret}") or session.current(request) is not None
            or bearer_reviewer(request) is not None or _signed_read(request, secret)):
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    return await handler(request)


def _signed_read(request: web.Request, secret: str) -> bool:
    """A GET of one debate (or its events) with that debate's transcript signature."""
    found = SIGNED_READS.fullmatch(request.path)
    return (found is not None and request.method in ("GET", "HEAD")
            and _same(request.query.get("sig", ""), transcript_signature(secret, found[1])))


def console_allowed(request: web.Request, *, debate_id: str | None = None,
                    signature: str = "") -> bool:
    """May this browser see the console (or, with Slack's `signature`, this one transcript)?"""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or session.current(request) is not None:
        return True
    return debate_id is not None and _same(signature, transcript_signature(secret, debate_id))


def console_login(request: web.Request, token: str | None) -> web.Response | None:
    """`/?token=<the API token>`: begins the operator's session and continues to `/`; None when
    the token is absent or wrong."""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not token or not _same(token, secret):
        return None
    return session.begin(request, "", via="token")
