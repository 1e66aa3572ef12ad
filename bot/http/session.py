"""The console's session: a signed, expiring cookie saying who this browser is (the operator who
gave the API token, or a reviewer signed in with Slack or an operator-issued link).

The cookie holds `grants.seal(...)`, never a secret: it is `HttpOnly`, `SameSite=Strict` (a
cross-site form cannot ride on it) and `Secure` when the console is served over https. Signing in
answers with a small page that continues to where the person was going, so the first page they
see after a cross-site redirect (from Slack) already carries the Strict cookie.

Each request's session is read once (`resolve`, from auth.identify): signed, unexpired, of the
person's current sign-out generation and, for a reviewer, of someone who is still one
(bot/service/sessions.py); `current` then answers from the request. Signing out moves the
person's generation on, so the cookie, wherever it was copied, opens nothing after.
"""

from __future__ import annotations

import logging
import secrets

from aiohttp import web

from bot.http.pages import html, render
from bot.http.redirects import same_origin_path
from bot.http.state import RUNTIME, SESSION_KEY, SESSION_REFUSED, VIEWER
from bot.service import sessions
from bot.service.grants import (
    MAX_GRANT_SECONDS,
    SESSION_SECONDS,
    Identity,
    Purpose,
    Scope,
    key_of,
    seal,
    unseal,
)
from storage.tenancy import Workspace

COOKIE = "dialectic_session"
log = logging.getLogger("dialectic.http.session")


def make_key(app: web.Application) -> bytes:
    """The key sessions are signed with: the service's (from the API token), else one of this
    process's own (a token-less server listens on loopback only, as one process)."""
    return key_of(app[RUNTIME].settings) or secrets.token_bytes(32)


def _now(request: web.Request) -> float:
    """The service's clock (tests move it), as Unix seconds."""
    return request.app[RUNTIME].service.clock().timestamp()


async def resolve(request: web.Request) -> None:
    """Read this request's session once: who it names, if it still holds (`current`), or why
    not (`refused`)."""
    found = unseal(request.app[SESSION_KEY], Purpose.SESSION, request.cookies.get(COOKIE, ""),
                   clock=lambda: _now(request))
    if found is None:
        return
    rt = request.app[RUNTIME]
    why = await sessions.refusal(found, desk=rt.reviews, db=rt.db, workspaces=rt.workspaces)
    if why is not None:
        log.info("session of %r refused: %s", found.user or "the operator", why)
        request[SESSION_REFUSED] = why
        return
    request[VIEWER] = found


def current(request: web.Request) -> Identity | None:
    """Who this browser's session names; None without a valid, unexpired, current session."""
    return request.get(VIEWER)


def refused(request: web.Request) -> str | None:
    """Why the session this request presented opens nothing, if it presented one."""
    return request.get(SESSION_REFUSED)


def secure(request: web.Request) -> bool:
    return request.app[RUNTIME].settings.public_url.startswith("https://")


async def begin(request: web.Request, user: str, *, via: str, scope: Scope, to: str = "/",
                until: float | None = None, workspace: Workspace | None = None
                ) -> web.Response:
    """A page that sets the session for `user` (opening `scope`; of `workspace` only, when
    given) and continues to `to` (a local path). `until`: when what vouched for them ends (a
    link's expiry); the session ends no later."""
    rt = request.app[RUNTIME]
    now = _now(request)
    seconds = min(rt.settings.console_session_hours * 3600,
                  SESSION_SECONDS if user == "" else MAX_GRANT_SECONDS)
    if until is not None:
        seconds = min(seconds, until - now)
    identity = Identity(user, now + seconds, via, scope,
                        await sessions.generation(rt.db, user),
                        team_id=workspace.team_id if workspace else "",
                        enterprise_id=(workspace.enterprise_id or "") if workspace else "")
    value = seal(request.app[SESSION_KEY], Purpose.SESSION, identity)
    target = same_origin_path(to, request.url.origin())  # callers check; so does this
    page = html(render("signed_in.html", user=user, to=target, refresh=None, viewer=identity))
    page.set_cookie(COOKIE, value, max_age=int(seconds), httponly=True, samesite="Strict",
                    secure=secure(request), path="/")
    return page


async def end(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Sign this browser's person out: every session they began so far ends, server-side."""
    found = current(request)
    if found is not None:
        rt = request.app[RUNTIME]
        await sessions.sign_out(rt.db, found.user, now=rt.service.clock())
    response.del_cookie(COOKIE, path="/")
    return response


__all__ = ["COOKIE", "begin", "current", "end", "make_key", "refused", "resolve", "secure"]
