"""Who may use the HTTP surface, decided in one place for the API and the console.

Without `DIALECTIC_API_TOKEN` the API and console are open (the server then binds to loopback
only, see server.check_exposure). With it, `/api/...`, `/mcp` and `/metrics` need
`Authorization: Bearer <token>`, a reviewer token (`dialectic reviewers link`) as the bearer, or
the console's signed session cookie (and `/mcp` an identity provider's access token, when one is
configured: bot/mcp/authorization.py; its 401s name the resource metadata); console pages need
the session (begun from `/?token=...`, a reviewer link or Slack sign-in) or, for one
transcript, a signed link that has not expired (it also opens that debate's JSON, its event
stream and its live body).

What each opens is its scope (grants.Scope). The API token, and the session `/?token=` begins,
open everything. A reviewer's link, token or session opens the reviewer's part only
(`review_allows`): the console's pages, the read API they need, deciding reviews and signing out;
not submitting, retrying or replaying debates, not schedules, budgets or `/metrics`. It opens
that only while its person is a reviewer (`DIALECTIC_REVIEWERS`, asked at each request by
`identify`) and, for a session, until they sign out (bot/service/sessions.py). In
multi-workspace mode a reviewer's sign-in belongs to one Slack workspace (`workspace_of`): it
opens that workspace's records only (scoping.py), its own settings page (its admins edit it:
workspace_settings.may_edit), and none of the operator's pages over every workspace
(`workspace_allows`: judges, evaluations, MCP, other workspaces' settings).

Deciding a review needs more than access: a reviewer's identity, from the session or a reviewer
token (`reviewer_of`). The API token alone names nobody.

Browsers get one more rule, token or not (`browser_guard`): a request that changes anything
must carry a JSON body (a cross-site form cannot send one without the browser asking first),
come from this server's own origin (scheme, host and port) when it names one, and name this
server in `Host` (its
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
from bot.http.state import BEARER_REFUSED, BEARER_REVIEWER, MCP_GUARD, OAUTH_BEARER, RUNTIME
from bot.service import sessions
from bot.service.grants import Identity, Purpose, Scope, key_of, unseal
from bot.service.links import same_secret, transcript_link_valid
from bot.service.runtime import Runtime
from storage.tenancy import Workspace

BEARER = "bearer "
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Reached by machines that name the server by address (probes, scrapers) or sign (Slack).
HOST_UNCHECKED = ("/healthz", "/metrics", "/slack/")
#: Browser forms (no JSON body): sign-in and sign-out, same-origin only.
FORM_PATHS = ("/signin", "/signout")
#: Console forms that change something: accepted only when the browser says it is same-origin.
CHANGE_FORMS = re.compile(r"/workspaces/[^/]+/settings")
JSON = "application/json"
#: What a transcript link's signature also opens: the debate as JSON and its event stream.
SIGNED_READS = re.compile(r"/api/debates/([^/]+)(?:/events)?")
#: A reviewer's part (Scope.REVIEW): the console's pages and the reads they need...
REVIEW_READS = re.compile(r"/(?:reviews|judges|evaluations(?:/[^/]+)?|static/[^/]+"
                          r"|debates/[^/]+(?:/live)?"
                          r"|api/reviews|api/debates(?:/[^/]+(?:/events)?)?)?")
#: ...deciding reviews and signing out; signing in is anyone's.
REVIEW_WRITES = re.compile(r"/api/reviews/[^/]+/decision|/signout")
REVIEW_ONLY = "a reviewer's sign-in reads the debates and decides reviews, nothing else"
#: Pages over every workspace's records, which a workspace's sign-in never opens.
OPERATOR_WIDE = re.compile(r"/(?:judges|evaluations(?:/[^/]+)?|mcp)")
#: A workspace's settings (page and API): a workspace's sign-in reaches its own only.
SETTINGS_PATH = re.compile(r"/(?:api/)?workspaces/([^/]+)/settings")
WORKSPACE_ONLY = ("a workspace's sign-in reads its own workspace's debates and decides its "
                  "reviews; this page is the operator's")
#: Paths that need nobody's identity (no session read, no database asked).
ANONYMOUS = ("/static/", "/healthz", "/slack/", "/.well-known/")


#: MCP over streamable HTTP (bot/mcp/http.py, mounted by the composition root): the API token's
MCP_PATH = "/mcp"


def needs_token(path: str) -> bool:
    """Paths the middleware guards with the token (the console guards its pages itself)."""
    return path.startswith("/api/") or path in ("/metrics", MCP_PATH)


def secret_of(rt: Runtime) -> str | None:
    token = rt.settings.api_token
    return None if token is None else token.get_secret_value()


def _bearer(request: web.Request) -> str:
    sent = request.headers.get("Authorization", "")
    return sent[len(BEARER):].strip() if sent[:len(BEARER)].lower() == BEARER else ""


def review_allows(method: str, path: str) -> bool:
    """Whether a reviewer's sign-in (Scope.REVIEW) opens `method path`. MCP is opened, and
    serves a reviewer its reading tools only (`review_only`)."""
    if path in ("/signin", "/healthz", MCP_PATH) or path.startswith("/signin/"):
        return True
    allowed = REVIEW_READS if method in SAFE_METHODS else REVIEW_WRITES
    return allowed.fullmatch(path) is not None


def workspace_allows(method: str, path: str, team_id: str) -> bool:
    """Whether a sign-in of workspace `team_id` opens `method path`: a reviewer's part, less the
    pages over every workspace, plus its own workspace's settings (who may change them is
    workspace_settings.may_edit's question)."""
    own = SETTINGS_PATH.fullmatch(path)
    if own is not None:
        return own[1] == team_id
    return review_allows(method, path) and OPERATOR_WIDE.fullmatch(path) is None


def workspace_of(request: web.Request) -> Workspace | None:
    """The workspace whose records alone this request's sign-in opens (None: not scoped)."""
    bearer = _bearer(request)
    secret = secret_of(request.app[RUNTIME])
    if secret is not None and bearer and same_secret(bearer, secret):
        return None   # the API token: everything, whatever cookie came along
    who = session.current(request) or bearer_reviewer(request)
    return who.workspace if who is not None and who.scope is Scope.REVIEW else None


async def _read_bearer_reviewer(request: web.Request) -> None:
    """The reviewer token in `Authorization: Bearer …`, if it is one that still holds."""
    rt = request.app[RUNTIME]
    key = key_of(rt.settings)
    token = _bearer(request)
    grant = None if key is None or not token else unseal(key, Purpose.REVIEWER, token)
    if grant is None:
        return
    why = await sessions.refusal(grant, desk=rt.reviews, db=None, workspaces=rt.workspaces)
    if why is None:
        request[BEARER_REVIEWER] = grant
    else:
        request[BEARER_REFUSED] = why


def bearer_reviewer(request: web.Request) -> Identity | None:
    """The reviewer a reviewer token in `Authorization: Bearer …` names (read by `identify`)."""
    return request.get(BEARER_REVIEWER)


@web.middleware
async def identify(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Who this request is, read once: the session, a reviewer token; each still holding."""
    if not request.path.startswith(ANONYMOUS):
        await session.resolve(request)
        await _read_bearer_reviewer(request)
    return await handler(request)


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
    if secret is None:
        return await handler(request)
    bearer = _bearer(request)
    if bearer and same_secret(bearer, secret):
        return await handler(request)   # the API token: everything
    who = session.current(request) or bearer_reviewer(request)
    if who is not None and who.scope is Scope.REVIEW:
        if who.team_id and not workspace_allows(request.method, request.path, who.team_id):
            return error(403, WORKSPACE_ONLY)
        if not who.team_id and not review_allows(request.method, request.path):
            return error(403, REVIEW_ONLY)
    if not needs_token(request.path) or who is not None or _signed_read(request, secret):
        return await handler(request)
    why = session.refused(request) or request.get(BEARER_REFUSED)
    if why:
        return error(403, why)
    guard = request.app.get(MCP_GUARD) if request.path == MCP_PATH else None
    if guard is None:
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    found = await guard.verify(bearer) if bearer else None
    if isinstance(found, Identity):
        request[OAUTH_BEARER] = found
        return await handler(request)
    return error(found.status if found else 401,
                 found.description if found else "sign in: no bearer token (Authorization: "
                 "Bearer …); the resource metadata names the identity provider",
                 headers={"WWW-Authenticate": guard.challenge(found)})


def review_only(request: web.Request) -> bool:
    """Whether a request that passed `auth_middleware` holds a reviewer's part alone (a reviewer's
    token or sign-in, not the API token): what MCP at /mcp serves read-only."""
    secret = secret_of(request.app[RUNTIME])
    bearer = _bearer(request)
    if secret is None or (bearer and same_secret(bearer, secret)):
        return False
    who = session.current(request) or bearer_reviewer(request) or request.get(OAUTH_BEARER)
    return who is not None and who.scope is Scope.REVIEW


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


async def console_login(request: web.Request, token: str | None) -> web.Response | None:
    """`/?token=<the API token>`: begins the operator's session (everything) and continues to
    `/`; None when the token is absent or wrong."""
    secret = secret_of(request.app[RUNTIME])
    if secret is None or not token or not same_secret(token, secret):
        return None
    return await session.begin(request, "", via="token", scope=Scope.FULL)


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


def _origin(value: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an origin or URL, the port filled in for http(s); None if not one."""
    try:
        url = URL(value)
    except ValueError:
        return None
    if not url.scheme or not url.host:
        return None
    return url.scheme.lower(), url.host.lower().strip("[]"), url.port


def own_origins(host: tuple[str, int | None] | None, public_url: str, scheme: str
                ) -> tuple[tuple[str, str, int | None] | None, ...]:
    """The origins this server is: its public URL's, and the one `Host` names, in the public URL's
    scheme when it names the public host (a TLS proxy speaks plain http to us), else in the
    scheme the request came in."""
    public = _origin(public_url)
    if host is None:
        return (public,)
    scheme = public[0] if public is not None and host[0] == public[1] else scheme
    return public, _origin(f"{scheme}://{_authority(host)}")


def _authority(host: tuple[str, int | None]) -> str:
    name = f"[{host[0]}]" if ":" in host[0] else host[0]
    return name if host[1] is None else f"{name}:{host[1]}"


def guard_refusal(method: str, path: str, headers: dict[str, str], hosts: frozenset[str],
                  public_url: str = "", scheme: str = "http") -> tuple[int, str] | None:
    """Why a request is refused before any handler sees it (status, message), or None.
    `scheme`: the one the request came in (http behind a TLS proxy)."""
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
        sent = _origin(origin)
        if sent is None or sent not in own_origins(host, public_url, scheme):
            return 403, "cross-origin requests may not change anything here"
    if path in FORM_PATHS or path.startswith("/signin/"):
        return None   # a form, same-origin when the browser says where it comes from
    if origin is not None and CHANGE_FORMS.fullmatch(path):
        return None
    if path == MCP_PATH and method == "DELETE":
        return None   # MCP ends its session with a bodiless DELETE (no form can send one)
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
                                allowed_hosts(public_url, extra), public_url, request.scheme)
        if refused is not None:
            return error(*refused)
        return await handler(request)

    return guard
