"""Who may use the HTTP surface, decided in one place for the API and the console.

Without `DIALECTIC_API_TOKEN` the API and console are open (the server then binds to loopback
only, see server.check_exposure). With it, `/api/...` and `/metrics` need
`Authorization: Bearer <token>` or the console's session cookie; console pages need the cookie
or, for one transcript, a signed link that has not expired. The cookie is a signed, expiring
session value (bot/service/links.py), never the token itself; `/?token=...` sets it once.

Browsers get one more rule, token or not (`browser_guard`): a request that changes anything
must carry a JSON body (a cross-site form cannot send one without the browser asking first),
come from this server's own origin when it names one, and name this server in `Host` (its
public host or a loopback name), so neither a web page nor DNS rebinding can start debates on
a loopback server. Slack's route is left to Slack's own signature check.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from bot.http.errors import error
from bot.http.routes import Handler
from bot.http.state import RUNTIME
from bot.service.links import (
    console_session,
    console_session_valid,
    same_secret,
    transcript_link_valid,
)
from bot.service.runtime import Runtime

COOKIE = "dialectic_session"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Reached by machines that name the server by address (probes, scrapers) or sign (Slack).
HOST_UNCHECKED = ("/healthz", "/metrics", "/slack/")
JSON = "application/json"


def needs_token(path: str) -> bool:
    """Paths the middleware guards with the token (the console guards its pages itself)."""
    return path.startswith("/api/") or path == "/metrics"


def secret_of(rt: Runtime) -> str | None:
    token = rt.settings.api_token
    return None if token is None else token.get_secret_value()


def _has_session(request: web.Request, secret: str) -> bool:
    rt = request.app[RUNTIME]
    return console_session_valid(secret, request.cookies.get(COOKIE, ""),
                                 now=rt.service.clock())


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not needs_token(request.path):
        return await handler(request)
    sent = request.headers.get("Authorization", "")
    bearer = sent[7:] if sent[:7].lower() == "bearer " else ""
    if not ((bearer and same_secret(bearer, secret)) or _has_session(request, secret)):
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    return await handler(request)


def console_allowed(request: web.Request, *, debate_id: str | None = None,
                    signature: str = "", expires: str = "") -> bool:
    """May this browser see the console (or, with a signed link, this one transcript)?"""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or _has_session(request, secret):
        return True
    return debate_id is not None and transcript_link_valid(
        secret, debate_id, expires=expires, signature=signature,
        now=request.app[RUNTIME].service.clock())


def console_login(request: web.Request, token: str | None) -> web.HTTPFound | None:
    """`/?token=<the API token>`: a redirect to `/` that sets the console's session cookie;
    None when the token is absent or wrong."""
    rt = request.app[RUNTIME]
    secret = secret_of(rt)
    if secret is None or not token or not same_secret(token, secret):
        return None
    found = web.HTTPFound("/")
    found.set_cookie(COOKIE, console_session(rt.settings, secret, now=rt.service.clock()),
                     max_age=int(rt.settings.console_session_hours * 3600), httponly=True,
                     samesite="Strict", secure=rt.settings.public_url.startswith("https://"))
    return found


# --- the browser guard ----------------------------------------------------------------------


def _host_port(value: str, default_port: int | None) -> tuple[str, int | None] | None:
    """(host, port) of a `Host` or origin value; None when it is not one."""
    try:
        url = URL(value if "://" in value else f"http://{value}")
    except ValueError:
        return None
    if not url.host:
        return None
    return url.host.lower().strip("[]"), url.explicit_port or default_port


def allowed_hosts(public_url: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names this server answers to: its public URL's host, loopback names, `extra`."""
    public = _host_port(public_url, None)
    names = {*LOOPBACK_NAMES, *(h.lower() for h in extra)}
    if public is not None:
        names.add(public[0])
    return frozenset(names)


def guard_refusal(method: str, path: str, headers: dict[str, str], hosts: frozenset[str],
                  public_url: str = "") -> tuple[int, str] | None:
    """Why a request is refused before any handler sees it (status, message), or None."""
    if path.startswith("/slack/"):
        return None
    host = _host_port(headers.get("host", ""), None)
    if not path.startswith(HOST_UNCHECKED) and (host is None or host[0] not in hosts):
        return 421, ("this server does not answer to that Host; use its public URL or a "
                     "loopback address")
    if method in SAFE_METHODS:
        return None
    origin = headers.get("origin")
    if origin is not None:
        sent = _host_port(origin, None)
        if sent is None or sent not in (host, _host_port(public_url, None)):
            return 403, "cross-origin requests may not change anything here"
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != JSON:
        return 415, f"send the request as {JSON}"
    return None


def browser_guard(extra_hosts: Iterable[str] = ()) -> Middleware:
    """The middleware applying `guard_refusal` to every request."""
    extra = tuple(extra_hosts)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        public_url = request.app[RUNTIME].settings.public_url
        headers = {k.lower(): v for k, v in request.headers.items()}
        refused = guard_refusal(request.method, request.path, headers,
                                allowed_hosts(public_url, extra), public_url)
        if refused is not None:
            return error(*refused)
        return await handler(request)

    return guard
