"""The Bolt AsyncApp: its Web API client, listeners, dedupe middleware, and how it is served.

HTTP: POST /slack/events on the service's own aiohttp application (Bolt verifies the signature
and answers 401 to a bad one). Socket Mode: an `AsyncSocketModeHandler` connecting in the background
from a `cleanup_ctx`, when `SLACK_APP_TOKEN` is set (a Slack that refuses it never stops the
service; `/healthz` says why).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.logger.messages import (
    info_default_oauth_settings_loaded,
    warning_client_prioritized_and_token_skipped,
    warning_token_skipped,
)
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import uninstalls
from bot.service.uninstalls import Stopped
from bot.slack.acks import answer_promptly
from bot.slack.client import WebClient
from bot.slack.clients import bind_request_client
from bot.slack.context import SlackContext
from bot.slack.gate import Installed, gate
from bot.slack.installations import InstalledWorkspaces, oauth_settings, register_revocation
from bot.slack.limits import PacedRateLimits
from bot.slack.listeners import (
    actions,
    commands,
    direct,
    events,
    feedback,
    home,
    shortcuts,
    unfurls,
    workspace_schedules,
    workspace_settings,
)
from bot.slack.settings import SlackSettings
from engine.errors import ConfigurationError

log = logging.getLogger("dialectic.slack")

EVENTS_PATH = "/slack/events"
RATE_LIMIT_RETRIES = 5
Cleanup = Callable[[web.Application], AsyncIterator[None]]


def make_client(settings: SlackSettings) -> AsyncWebClient:
    """The Web API client: configurable base URL (tests use a fake), 429s retried, a reply
    that is not Slack's JSON an error like any other (bot/slack/client.py)."""
    if settings.slack_bot_token is None and not settings.multi_workspace:
        raise ConfigurationError("SLACK_BOT_TOKEN is not set")
    # multi-workspace mode: no token of its own; each request's client carries its workspace's
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    client = WebClient(token=token, base_url=settings.slack_api_url)
    # a 429 holds back every caller of that method, then paces it (bot/slack/limits.py)
    client.retry_handlers.append(PacedRateLimits(max_retry_count=RATE_LIMIT_RETRIES))
    return client


class OneWorkspace(AsyncAuthorize):
    """Every request is authorised with the configured bot token, whatever the environment says.

    Given no `authorize`, Bolt reads SLACK_CLIENT_ID and SLACK_CLIENT_SECRET from the environment
    and, when both are set, switches to its OAuth installation flow: a file installation store
    that knows no workspace, so every request would be answered "Please install this app". Those
    variables are this service's "Sign in with Slack" settings (bot/slack/signin.py), so the app
    is always given this explicit authorisation: the bot's identity, asked once (`auth.test`).
    Whether the request's workspace is the installed one is the gate's question (gate.py)."""

    def __init__(self, client: AsyncWebClient, installed: Installed | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # bolt leaves it untyped
        self.client = client
        self.installed = installed or Installed(client)

    async def __call__(self, *, context: AsyncBoltContext, enterprise_id: str | None,
                       team_id: str | None, user_id: str | None,
                       actor_enterprise_id: str | None = None, actor_team_id: str | None = None,
                       actor_user_id: str | None = None) -> AuthorizeResult:
        bot = await self.installed.identity()
        # as Bolt's own single-workspace authorisation builds it, request user included
        return AuthorizeResult(
            enterprise_id=bot.get("enterprise_id"), team_id=bot.get("team_id"),
            bot_id=bot.get("bot_id"), bot_user_id=bot.get("user_id"), user_id=user_id,
            bot_token=self.client.token, bot_scopes=bot.headers.get("x-oauth-scopes"))


#: Bolt's start-up lines that are always true of this app and never actionable: the token is the
#: client's (settings read the same SLACK_BOT_TOKEN Bolt reads), authorisation is `OneWorkspace`,
#: and the OAuth settings Bolt loads from SLACK_CLIENT_ID/SECRET are never used to authorise.
_NOT_ACTIONABLE = frozenset({warning_client_prioritized_and_token_skipped(),
                             warning_token_skipped(), info_default_oauth_settings_loaded()})


class _NotActionable(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in _NOT_ACTIONABLE


def _bolt_logger() -> logging.Logger:
    logger = logging.getLogger("dialectic.bolt")
    if not any(isinstance(f, _NotActionable) for f in logger.filters):
        logger.addFilter(_NotActionable())
    return logger


def workspace_gone(ctx: SlackContext) -> Callable[[str, str | None], Awaitable[Stopped]]:
    """What an uninstall does with the workspace's data (DIALECTIC_UNINSTALL_DATA)."""
    async def gone(team_id: str, enterprise_id: str | None) -> Stopped:
        return await uninstalls.uninstalled(ctx.rt.db, team_id=team_id,
                                            enterprise_id=enterprise_id,
                                            data=ctx.settings.uninstall_data,
                                            clock=ctx.rt.service.clock,
                                            lease_seconds=ctx.rt.service.settings.lease_seconds)
    return gone


class DropRepeatedEvents(AsyncMiddleware):
    """Slack retries an event it thinks failed (X-Slack-Retry-Num): handle each id once. A class
    middleware, as the gate (gate.py): Bolt builds no listener arguments for it."""

    def __init__(self, ctx: SlackContext) -> None:
        self.ctx = ctx

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        body = req.body
        if body.get("type") == "event_callback" and not await self.ctx.first_time(
                "event", body.get("event_id")):
            return BoltResponse(status=200, body="")
        await next()
        return None


def build_bolt_app(ctx: SlackContext) -> AsyncApp:
    """The Bolt app with every listener registered, requests of workspaces that are not
    installed refused (gate.py) and repeated event deliveries dropped."""
    secret = ctx.settings.slack_signing_secret
    installed: Installed | InstalledWorkspaces
    if ctx.settings.multi_workspace:   # installed from a link, in many workspaces
        store = ctx.notifier.clients.store
        if store is None:
            raise ConfigurationError("multi-workspace mode: the notifier has no installation "
                                     "store (attach_notifier makes it)")
        oauth = oauth_settings(ctx.settings, ctx.rt.db, store,
                               public_url=ctx.rt.settings.public_url)
        # the gate before Bolt's own authorisation: an uninstalled workspace is refused
        # quietly, not answered "please reinstall"
        installed = InstalledWorkspaces(store)
        app = AsyncApp(client=ctx.client, name="dialectic", logger=_bolt_logger(),
                       oauth_settings=oauth, before_authorize=gate(installed),
                       signing_secret=secret.get_secret_value() if secret is not None else "",
                       # events over Socket Mode only: nothing is POSTed to verify
                       request_verification_enabled=secret is not None)
        register_revocation(app, store, on_uninstall=workspace_gone(ctx))
        app.middleware(bind_request_client)   # its listeners use the workspace's token
    else:
        installed = Installed(ctx.client)
        app = AsyncApp(client=ctx.client, name="dialectic", logger=_bolt_logger(),
                       authorize=OneWorkspace(ctx.client, installed),
                       signing_secret=secret.get_secret_value() if secret is not None else "",
                       request_verification_enabled=secret is not None)

    # the 200 leaves as the listener acks, not at Bolt's next 10 ms poll
    answer_promptly(app, ctx.answering)
    if not ctx.settings.multi_workspace:
        app.middleware(gate(installed))   # first: another workspace's request leaves no trace
    app.middleware(DropRepeatedEvents(ctx))
    for surface in (commands, events, actions, feedback, shortcuts, home, workspace_settings,
                    workspace_schedules, direct, unfurls):
        surface.register(app, ctx)
    return app


def signature_headers_readable(headers: Mapping[str, str]) -> bool:
    """Whether Slack's signature headers can even be checked: a timestamp of digits and an
    ASCII signature (Bolt raises on anything else, which would answer 500)."""
    stamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    return (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12
            and signature.isascii() and 0 < len(signature) <= 256)


def events_handler(bolt: AsyncApp) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        if not signature_headers_readable(request.headers):
            log.info("refused a request to %s without readable signature headers", EVENTS_PATH)
            return web.json_response({"error": "invalid request"}, status=401)
        try:
            (await request.read()).decode("utf-8")
        except UnicodeDecodeError as exc:   # Bolt would read it as text, and fail with a 500
            log.warning("refused a request to %s: the body is not UTF-8 (byte %d)",
                        EVENTS_PATH, exc.start + 1)
            return web.json_response({"error": "the body is not UTF-8"}, status=400)
        response = await bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    return handle


def oauth_handler(step: Callable[[AsyncBoltRequest], Awaitable[BoltResponse]]
                  ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await step(await to_bolt_request(request)))

    return handle


def mount(bolt: AsyncApp, web_app: web.Application, settings: SlackSettings,
          problems: dict[str, str] | None = None) -> None:
    """Serve Bolt over HTTP (with a signing secret) and/or Socket Mode (with an app token);
    `problems["slack"]` says why Socket Mode is not connected while it is not."""
    if settings.slack_signing_secret is not None:
        web_app.router.add_post(EVENTS_PATH, events_handler(bolt))
    flow = bolt.oauth_flow
    if flow is not None:   # "Add to Slack", and Slack's redirect back
        web_app.router.add_get(flow.install_path, oauth_handler(flow.handle_installation))
        web_app.router.add_get(flow.redirect_uri_path, oauth_handler(flow.handle_callback))
    if settings.slack_app_token is not None:
        web_app.cleanup_ctx.append(socket_mode(bolt, settings.slack_app_token.get_secret_value(),
                                               {} if problems is None else problems))


def socket_mode(bolt: AsyncApp, app_token: str, problems: dict[str, str]) -> Cleanup:
    """Connect in the background: a Slack that refuses or cannot be reached must not keep the
    API, the console and the workers from serving. slack_sdk retries on its own; each new
    reason is logged once, in one line, and `/healthz` says it until the connection is up."""
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        sdk_log = logging.getLogger("dialectic.slack.socket")
        sdk_log.addFilter(SocketTrouble(problems))
        handler = AsyncSocketModeHandler(bolt, app_token, logger=sdk_log)
        problems["slack"] = "Socket Mode: connecting"
        task = asyncio.create_task(_connect(handler, problems), name="slack-socket-mode")
        yield
        task.cancel()
        await handler.close_async()  # type: ignore[no-untyped-call]  # bolt leaves it untyped

    return ctx


async def _connect(handler: Any, problems: dict[str, str]) -> None:
    await handler.connect_async()   # returns once connected; retries inside until then
    problems.pop("slack", None)
    log.info("Slack Socket Mode connected")


class SocketTrouble(logging.Filter):
    """slack_sdk logs a traceback every ten seconds while it cannot connect: keep the reason for
    `/healthz`, and let one line through per new reason."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__()
        self.problems = problems

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not text.startswith(("Failed to connect", "Failed to retrieve WSS URL")):
            return True
        found = re.search(r"'error': '([^']+)'", text)
        reason = found.group(1) if found else text.split("(error: ", 1)[-1].split("\n")[0][:200]
        problem = f"Socket Mode cannot connect: {reason}"
        if text.startswith("Failed to retrieve WSS URL") or problem == self.problems.get("slack"):
            return False
        self.problems["slack"] = problem
        record.msg, record.args, record.exc_info, record.exc_text = (
            f"Slack {problem}; retrying every 10 s", None, None, None)
        return True


__all__ = ["EVENTS_PATH", "build_bolt_app", "events_handler", "make_client", "mount"]
