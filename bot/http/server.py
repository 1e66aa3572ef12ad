"""The HTTP surface's aiohttp application: the REST API, the web console, `/healthz` and
`/metrics`, registered from one route table that the OpenAPI document is generated from. The
composition root (bot/main.py) adds Slack's route and the workers and scheduler around it, and
serves it."""

from __future__ import annotations

from aiohttp import web

from bot.http import api, console, metrics, openapi, oversight, reviews, signin
from bot.http.auth import auth_middleware, browser_guard
from bot.http.errors import error_middleware
from bot.http.hardening import body_deadline, security_headers
from bot.http.routes import Route
from bot.http.session import make_key
from bot.http.settings import HttpSettings
from bot.http.state import HTTP_SETTINGS, ROUTE_TABLE, RUNTIME, SCHEDULER, SESSION_KEY, SLACK_ON
from bot.http.streams import STREAM_LIMITS, StreamLimits
from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from bot.service.settings import ServiceSettings
from engine.errors import ConfigurationError

MAX_BODY = 256 * 1024
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
ROUTES: tuple[Route, ...] = (*api.ROUTES, *reviews.ROUTES, *oversight.ROUTES, openapi.ROUTE,
                             metrics.ROUTE, *console.ROUTES, *signin.ROUTES)


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
    app.middlewares.extend([error_middleware, body_deadline, browser_guard(http.allowed_hosts),
                            auth_middleware])
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
    """Refuse to listen beyond loopback without a token: the API starts paid debates. An empty
    token is no token (the settings refuse one; a value built around them is still caught)."""
    token = settings.api_token
    if (token is None or not token.get_secret_value().strip()) and host not in LOOPBACK:
        raise ConfigurationError(
            f"refusing to listen on {host} without DIALECTIC_API_TOKEN: set a token, or listen "
            "on 127.0.0.1")
