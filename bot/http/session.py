"""The console's session: a signed, expiring cookie saying who this browser is (the operator who
gave the API token, or a reviewer signed in with Slack or an operator-issued link).

The cookie holds `grants.seal(...)`, never a secret: it is `HttpOnly`, `SameSite=Strict` (a
cross-site form cannot ride on it) and `Secure` when the console is served over https. Signing in
answers with a small page that continues to where the person was going, so the first page they
see after a cross-site redirect (from Slack) already carries the Strict cookie.
"""

from __future__ import annotations

import secrets

from aiohttp import web

from bot.http.pages import html, render
from bot.http.redirects import same_origin_path
from bot.http.state import RUNTIME, SESSION_KEY
from bot.service.grants import (
    MAX_GRANT_SECONDS,
    SESSION_SECONDS,
    Identity,
    Purpose,
    key_of,
    seal,
    unseal,
)

COOKIE = "dialectic_session"


def make_key(app: web.Application) -> bytes:
    """The key sessions are signed with: the service's (from the API token), else one of this
    process's own (a token-less server listens on loopback only, as one process)."""
    return key_of(app[RUNTIME].settings) or secrets.token_bytes(32)


def _now(request: web.Request) -> float:
    """The service's clock (tests move it), as Unix seconds."""
    return request.app[RUNTIME].service.clock().timestamp()


def current(request: web.Request) -> Identity | None:
    """Who this browser's session names; None without a valid, unexpired session."""
    return unseal(request.app[SESSION_KEY], Purpose.SESSION, request.cookies.get(COOKIE, ""),
                  clock=lambda: _now(request))


def secure(request: web.Request) -> bool:
    return request.app[RUNTIME].settings.public_url.startswith("https://")


def begin(request: web.Request, user: str, *, via: str, to: str = "/") -> web.Response:
    """A page that sets the session for `user` and continues to `to` (a local path)."""
    hours = request.app[RUNTIME].settings.console_session_hours
    seconds = min(hours * 3600, SESSION_SECONDS if user == "" else MAX_GRANT_SECONDS)
    identity = Identity(user, _now(request) + seconds, via)
    value = seal(request.app[SESSION_KEY], Purpose.SESSION, identity)
    target = same_origin_path(to, request.url.origin())  # callers check; so does this
    page = html(render("signed_in.html", user=user, to=target, refresh=None, viewer=identity))
    page.set_cookie(COOKIE, value, max_age=int(seconds), httponly=True, samesite="Strict",
                    secure=secure(request), path="/")
    return page


def end(response: web.StreamResponse) -> web.StreamResponse:
    response.del_cookie(COOKIE, path="/")
    return response


__all__ = ["COOKIE", "begin", "current", "end", "make_key", "secure"]
