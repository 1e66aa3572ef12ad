"""The Bolt AsyncApp: its Web API client, listeners, dedupe middleware, and how it is served.

HTTP: POST /slack/events on the service's own aiohttp application (Bolt verifies the signature
and answers 401 to a bad one). Socket Mode: an `AsyncSocketModeHandler` connected in a
`cleanup_ctx`, when `SLACK_APP_TOKEN` is set.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.client import WebClient
from bot.slack.context import SlackContext
from bot.slack.listeners import actions, commands, events, home, shortcuts
from bot.slack.settings import SlackSettings
from engine.errors import ConfigurationError

log = logging.getLogger("dialectic.slack")

EVENTS_PATH = "/slack/events"
RATE_LIMIT_RETRIES = 3
Cleanup = Callable[[web.Application], AsyncIterator[None]]


def make_client(settings: SlackSettings) -> AsyncWebClient:
    """The Web API client: configurable base URL (tests use a fake), 429s retried, a reply
    that is not Slack's JSON an error like any other (bot/slack/client.py)."""
    if settings.slack_bot_token is None:
        raise ConfigurationError("SLACK_BOT_TOKEN is not set")
    client = WebClient(token=settings.slack_bot_token.get_secret_value(),
                       base_url=settings.slack_api_url)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


class _TokenFromClient(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and, given a client as well, warns
    on every start that the token "will be unused". Our client is built from that very token
    (settings read the same variable), so the warning is always true and never actionable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


def _bolt_logger() -> logging.Logger:
    logger = logging.getLogger("dialectic.bolt")
    if not any(isinstance(f, _TokenFromClient) for f in logger.filters):
        logger.addFilter(_TokenFromClient())
    return logger


def build_bolt_app(ctx: SlackContext) -> AsyncApp:
    """The Bolt app with every listener registered and repeated event deliveries dropped."""
    secret = ctx.settings.slack_signing_secret
    app = AsyncApp(client=ctx.client, name="dialectic", logger=_bolt_logger(),
                   signing_secret=secret.get_secret_value() if secret is not None else "",
                   request_verification_enabled=secret is not None)

    async def drop_repeated_events(body: dict[str, Any],
                                   next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        """Slack retries an event it thinks failed (X-Slack-Retry-Num): handle each id once."""
        if body.get("type") == "event_callback" and not await ctx.first_time(
                "event", body.get("event_id")):
            return BoltResponse(status=200, body="")
        await next()
        return None

    app.middleware(drop_repeated_events)
    for surface in (commands, events, actions, shortcuts, home):
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
        response = await bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    return handle


def mount(bolt: AsyncApp, web_app: web.Application, settings: SlackSettings) -> None:
    """Serve Bolt over HTTP (with a signing secret) and/or Socket Mode (with an app token)."""
    if settings.slack_signing_secret is not None:
        web_app.router.add_post(EVENTS_PATH, events_handler(bolt))
    if settings.slack_app_token is not None:
        web_app.cleanup_ctx.append(socket_mode(bolt, settings.slack_app_token.get_secret_value()))


def socket_mode(bolt: AsyncApp, app_token: str) -> Cleanup:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(bolt, app_token)
        await handler.connect_async()  # type: ignore[no-untyped-call]  # bolt leaves it untyped
        log.info("Slack Socket Mode connected")
        yield
        await handler.close_async()  # type: ignore[no-untyped-call]  # bolt leaves it untyped

    return ctx


__all__ = ["EVENTS_PATH", "build_bolt_app", "events_handler", "make_client", "mount"]
