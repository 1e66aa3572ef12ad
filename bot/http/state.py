"""What the HTTP app holds, under typed keys: the runtime every handler reads (the API and the
console alike), the scheduler, whether Slack is on (for `/healthz`), the route table it was built
from, the key console sessions are signed with, and the HTTP settings (limits, timeouts)."""

from __future__ import annotations

from aiohttp import web

from bot.http.routes import Route
from bot.http.settings import HttpSettings
from bot.scheduling.scheduler import Scheduler
from bot.service.grants import Identity, ResourceGuard
from bot.service.runtime import Runtime

RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime", Runtime)
SCHEDULER: web.AppKey[Scheduler] = web.AppKey("scheduler", Scheduler)
SLACK_ON: web.AppKey[bool] = web.AppKey("slack_on", bool)
ROUTE_TABLE: web.AppKey[tuple[Route, ...]] = web.AppKey("route_table", tuple)
SESSION_KEY: web.AppKey[bytes] = web.AppKey("session_key", bytes)
HTTP_SETTINGS: web.AppKey[HttpSettings] = web.AppKey("http_settings", HttpSettings)
#: `/mcp`'s OAuth resource server, when an identity provider signs MCP clients in
MCP_GUARD: web.AppKey[ResourceGuard] = web.AppKey("mcp_guard", ResourceGuard)

#: Per request, read once by auth.identify: the session's identity (when it still holds) or why
#: it was refused, and the same of a reviewer token sent as the bearer.
VIEWER: web.RequestKey[Identity] = web.RequestKey("viewer", Identity)
SESSION_REFUSED: web.RequestKey[str] = web.RequestKey("session_refused", str)
BEARER_REVIEWER: web.RequestKey[Identity] = web.RequestKey("bearer_reviewer", Identity)
BEARER_REFUSED: web.RequestKey[str] = web.RequestKey("bearer_refused", str)
#: Who an identity provider's access token names, on a request to /mcp that it opened.
OAUTH_BEARER: web.RequestKey[Identity] = web.RequestKey("oauth_bearer", Identity)
