"""Who may use the HTTP surface, decided in one place for the API and the console.

Without `DIALECTIC_API_TOKEN` the API and console are open (the server then binds to loopback
only, see server.check_exposure). With it, `/api/...` and `/metrics` need
`Authorization: Bearer <token>`, a reviewer token (`dialectic reviewers link`) as the bearer, or
the console's signed session cookie; console pages need the session (begun from `/?token=...`,
a reviewer link or Slack sign-in) or, for one transcript, a signed link that has not expired
(it also opens that debate's JSON, its event stream and its live body).

Deciding a review needs more than access: a reviewer's identity, from the session or a reviewer
token (`reviewer_of`). The API token alone names nobody.

Browsers get one more rule, token or not (`browser_guard`): a request that changes anything
must carry a JSON body (a cross-site form cannot send one without the browser asking first),
come from this server's own origin when it names one, and name this server in `Host` (its
public host or a loopback name), so neither a web page nor DNS rebinding can start debates on
a loopback server. Slack's route is left to Slack's own signature check. Sign-in forms post to
`/signin` and `/signout` and are same-origin only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from bot.http import session
from bot.http.errors import error
from bot.http.routes import Handler
from bot.http.state import RUNTIME
from bot.service.grants import Identity, Purpose, key_of, unseal
from bot.service.links import same_secret, transcript_link_valid
from bot.service.runtime import Runtime

BEARER = "bearer "
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Reached by machines that name the server by address (probes, scrapers) or sign (Slack).
HOST_UNCHECKED = ("/healthz", "/metrics", "/slack/")
#: Browser forms (no JSON body): sign-in and sign-out, same-origin only.
FORM_PATHS = ("/signin", "/signout")
JSON = "application/json"
#: What a transcript link's signature also opens: the debate as JSON and its event stream.
SIGNED_READS = re.compile(r"/api/debates/([^/]+)(?:/events)?")


def needs_token(path: str) -> bool:
    """Paths the middleware guards with the token (the console guards its pages itself)."""
    return path.startswith("/api/") or path == "/metrics"


def secret_of(rt: Runtime) -> str | None:
    token = rt.settings.api_token
    return None if token is None else token.get_secret_value()


def _bearer(request: web.Request) -> str:
    sent = request.headers.get("Authorization", "")
    return sent[len(BEARER):].strip() if sent[:len(BEARER)].lower() == BEARER else ""


def bearer_reviewer(request: web.Request) -> Identity | None:
    """The reviewer a reviewer token in `Authorization: Bearer …` names, if it is one."""
    key = key_of(request.app[RUNTIME].settings)
    token = _bearer(request)
    if key is None or not token:
        return None
    return unseal(key, Purpose.REVIEWER, token)


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
    bearer = _bearer(request)
    if not ((bearer and same_secret(bearer, secret)) or session.current(request) is not None
            or bearer_reviewer(request) is not None or _signed_read(request, secret)):
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    return await handler(request)


def _signed_read(request: web.Request, secret: str) -> bool:
    """A GET of one debate (or its events) with that debate's unexpired transcript link."""
    found = SIGNED_READS.fullmatch(request.path)
    return (found is not None and request.method in SAFE_METHODS
            and transcript_link_valid(secret, found[1], expires=request.query.get("exp", ""),
                                      signature=request.query.get("sig", ""),
                                      now=request.app[RUNTIME].service.clock()))


def console_allowed(request: web.Request, *, debate_id: str | None = None,
                    signature: str = "", expires: str = "") -> bool:
    """May this browser see the console (or, with a signed link, this one transcript)?"""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or session.current(request) is not None:
        return True
    return debate_id is not None and transcript_link_valid(
        secret, debate_id, expires=expires, signature=signature,
        now=request.app[RUNTIME].service.clock())


def console_login(request: web.Request, token: str | None) -> web.Response | None:
    """`/?token=<the API token>`: begins the operator's session and continues to `/`; None when
    the token is absent or wrong."""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not token or not same_secret(token, secret):
        return None
    return session.begin(request, "", via="token")


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
    if path in FORM_PATHS or path.startswith("/signin/"):
        return None   # a form, same-origin when the browser says where it comes from
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
