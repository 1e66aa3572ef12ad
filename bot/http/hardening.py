"""What every response and connection gets, whatever the route: security headers, `Secure`
cookies behind https, and read deadlines, so no page can be framed or sniffed into script and no
slow client can hold a connection open forever.

    security_headers   (on_response_prepare) Content-Security-Policy (scripts and styles from
                       this origin only, no inline ones, never framed), X-Frame-Options,
                       X-Content-Type-Options, Referrer-Policy; every cookie `Secure` when
                       the public URL is https
    body_deadline      a request body must arrive within `body_timeout_seconds` (408)
    runner_options     the server's own deadline for headers and idle keep-alive connections
                       (aiohttp's keep-alive timer runs from the connection's start and from
                       each response, and closes a connection still waiting for a request's
                       headers, so it bounds trickled headers as well as silent connections),
                       and its log: a request aiohttp cannot parse is one warning line
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from aiohttp import web
from aiohttp.hdrs import SET_COOKIE
from aiohttp.http_exceptions import HttpProcessingError

from bot.http.errors import error
from bot.http.routes import Handler
from bot.http.settings import HttpSettings
from bot.http.state import HTTP_SETTINGS, RUNTIME

#: The console's script and stylesheet are files under /static; nothing inline runs or styles.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
    "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
))
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: runs as any response's headers are about to go out, whether a
    handler returned it, raised it (redirects), streams it (events) or aiohttp made it (404)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    cookies = response.headers.getall(SET_COOKIE, [])
    if cookies and request.app[RUNTIME].settings.public_url.startswith("https://"):
        del response.headers[SET_COOKIE]  # already written out from response.cookies
        for cookie in cookies:
            secure = "; secure" in cookie.lower()
            response.headers.add(SET_COOKIE, cookie if secure else f"{cookie}; Secure")


@web.middleware
async def body_deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Reads a request's body (up to the size cap) within `body_timeout_seconds`; handlers then
    read it from memory. A client trickling its body gets a 408 and the connection closes."""
    if request.body_exists:
        seconds = request.app[HTTP_SETTINGS].body_timeout_seconds
        try:
            async with asyncio.timeout(seconds):
                await request.read()
        except TimeoutError:
            refused = error(408, f"the request body did not arrive within {seconds:g} s")
            refused.force_close()
            return refused
    return await handler(request)


class _MalformedRequests(logging.Filter):
    """aiohttp answers a request it cannot parse (a header over 8190 bytes, a control
    character in a header) with a 400, and logs it as an ERROR with a whole traceback: for
    what a client sent, one warning line is the truth (its first line only: the rest echoes
    the raw bytes, which may hold a token)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            said = (str(exc.message).strip().splitlines() or [type(exc).__name__])[0]
            said = re.split(r":? b['\"]", said, maxsplit=1)[0]   # the raw bytes stay out
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "refused a malformed request from %s: %s"
            record.args = (remote, said.rstrip(":")[:200])
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


#: the logger aiohttp's protocol handler writes to (its parse errors made one warning line)
PROTOCOL_LOG = logging.getLogger("dialectic.http.protocol")
PROTOCOL_LOG.addFilter(_MalformedRequests())


def runner_options(http: HttpSettings) -> dict[str, Any]:
    """Keyword arguments for `web.AppRunner` (and aiohttp's TestServer, which passes them on)."""
    return {"keepalive_timeout": http.idle_timeout_seconds, "logger": PROTOCOL_LOG}


__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "body_deadline", "runner_options",
           "security_headers"]
