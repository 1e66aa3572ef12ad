"""The HTTP surface's aiohttp application: the REST API, the web console, `/healthz` and
`/metrics`. The composition root (bot/main.py) adds Slack's route and the workers and scheduler
around it, and serves it."""

from __future__ import annotations

from aiohttp import web

from bot.http import api, console
from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from bot.service.settings import ServiceSettings
from engine.errors import ConfigurationError

MAX_BODY = 256 * 1024
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def build_app(rt: Runtime, scheduler: Scheduler, *, slack_enabled: bool) -> web.Application:
    """The API and console over `rt`; `slack_enabled` is what `/healthz` reports."""
    app = web.Application(client_max_size=MAX_BODY)
    app[api.RUNTIME] = rt
    app[api.SCHEDULER] = scheduler
    app[api.SLACK_ON] = slack_enabled
    app.middlewares.extend([api.error_middleware, api.auth_middleware])
    api.add_routes(app)
    console.add_routes(app)
    return app


def check_exposure(settings: ServiceSettings, host: str) -> None:
    """Refuse to listen beyond loopback without a token: the API starts paid debates."""
    if settings.api_token is None and host not in LOOPBACK:
        raise ConfigurationError(
            f"refusing to listen on {host} without DIALECTIC_API_TOKEN: set a token, or listen "
            "on 127.0.0.1")
