"""The HTTP surface's aiohttp application: the REST API, the web console, `/healthz` and
`/metrics`, registered from one route table that the OpenAPI document is generated from. The
composition root (bot/main.py) adds Slack's route and the workers and scheduler around it, and
serves it."""

from __future__ import annotations

import ipaddress
import logging

from aiohttp import web

from bot.http import (
    api,
    console,
    deliveries,
    evaluations,
    metrics,
    openapi,
    oversight,
    reviews,
    signin,
    workspace_schedules,
    workspace_settings,
)
from bot.http.auth import auth_middleware, browser_guard, identify
from bot.http.errors import error_middleware
from bot.http.hardening import body_deadline, security_headers
from bot.http.routes import Route
from bot.http.session import make_key
from bot.http.settings import HttpSettings
from bot.http.state import HTTP_SETTINGS, ROUTE_TABLE, RUNTIME, SCHEDULER, SESSION_KEY, SLACK_ON
from bot.http.streams import STREAM_LIMITS, StreamLimits
from bot.http.tracing import trace_requests
from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from bot.service.settings import ServiceSettings
from engine.errors import ConfigurationError

MAX_BODY = 256 * 1024
#: `.env.example`'s value for DIALECTIC_API_TOKEN (a test keeps the two equal).
EXAMPLE_TOKEN = "change-me-to-a-long-random-token"
MIN_TOKEN_CHARS = 32
MAKE_TOKEN = 'python3 -c "import secrets; print(secrets.token_urlsafe(32))"'
log = logging.getLogger(__name__)
ROUTES: tuple[Route, ...] = (*api.ROUTES, *reviews.ROUTES, *oversight.ROUTES, openapi.ROUTE,
                             *evaluations.ROUTES, *deliveries.ROUTES,
                             metrics.ROUTE, *console.ROUTES, *signin.ROUTES,
                             *workspace_settings.ROUTES, *workspace_schedules.ROUTES)


def build_app(rt: Runtime, scheduler: Scheduler, *, slack_enabled: bool,
              http: HttpSettings | None = None) -> web.Application:
    """The API and console over `rt`; `slack_enabled` is what `/healthz` reports; `http`: the
    Host names to answer besides the public URL's and loopback's, the limits and deadlines."""
    http = http or HttpSettings()
    app = web.Application(client_max_size=MAX_BODY)
    app[RUNTIME] = rt
    app[SCHEDULER] = scheduler
    app[SLACK_ON] = slack_enabled
    app[SESSION_KEY] = make_key(app)
    app[HTTP_SETTINGS] = http
    app[STREAM_LIMITS] = StreamLimits(per_client=http.sse_per_client, total=http.sse_global)
    app.middlewares.extend([trace_requests, error_middleware, body_deadline,
                            browser_guard(http.allowed_hosts), identify, auth_middleware])
    app.on_response_prepare.append(security_headers)
    for r in ROUTES:
        if r.method == "GET":
            app.router.add_get(r.path, r.handler)  # and HEAD, as every GET may be asked
        else:
            app.router.add_route(r.method, r.path, r.handler)
    app[ROUTE_TABLE] = ROUTES
    app[openapi.DOCUMENT] = openapi.document(ROUTES)
    return app


def check_exposure(settings: ServiceSettings, host: str) -> None:
    """Refuse to listen beyond loopback without a strong token: the API starts paid debates. An
    empty token is no token (the settings refuse one; a value built around them is still caught);
    a short one or `.env.example`'s placeholder is refused beyond loopback, warned on it."""
    token = settings.api_token
    secret = token.get_secret_value().strip() if token is not None else ""
    exposed = not is_loopback(host)
    if settings.mcp_authorization_servers and not secret:
        raise ConfigurationError(
            "DIALECTIC_MCP_AUTHORIZATION_SERVERS guards /mcp on a guarded server only: set "
            "DIALECTIC_API_TOKEN too (without it the server is open, on loopback only)")
    if not secret:
        if exposed:
            raise ConfigurationError(
                f"refusing to listen on {host} without DIALECTIC_API_TOKEN: set a token, or "
                "listen on 127.0.0.1")
        return
    weakness = token_weakness(secret)
    if weakness is None:
        return
    if exposed:
        raise ConfigurationError(f"refusing to listen on {host}: DIALECTIC_API_TOKEN {weakness}; "
                                 f"make one with: {MAKE_TOKEN}")
    log.warning("DIALECTIC_API_TOKEN %s; fine on loopback, refused beyond it (make one with: %s)",
                weakness, MAKE_TOKEN)


def token_weakness(secret: str) -> str | None:
    """Why a token guards nothing (None when it is fit to put on a network)."""
    if secret == EXAMPLE_TOKEN:
        return "is .env.example's placeholder"
    if len(secret) < MIN_TOKEN_CHARS:
        return f"is {len(secret)} characters, fewer than {MIN_TOKEN_CHARS}"
    return None


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`: only this machine reaches them."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
