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
                       headers, so it bounds trickled headers as well as silent connections)
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.hdrs import SET_COOKIE

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


def runner_options(http: HttpSettings) -> dict[str, Any]:
    """Keyword arguments for `web.AppRunner` (and aiohttp's TestServer, which passes them on)."""
    return {"keepalive_timeout": http.idle_timeout_seconds}


__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "body_deadline", "runner_options",
           "security_headers"]
