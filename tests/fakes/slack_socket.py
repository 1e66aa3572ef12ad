"""Slack's Socket Mode, as the fake Slack serves it (api.slack.com/apis/socket-mode): an
app-level token (`xapp-…`) opens a connection with `apps.connections.open`, which answers a
WebSocket URL; the socket greets the client with a `hello` envelope and answers pings. A bot
token is `not_allowed_token_type`; a refused app token (`refuse`) is `invalid_auth`, as a
revoked one is. Events over the socket are not simulated: the HTTP path carries them in tests."""

from __future__ import annotations

import secrets
from typing import Any

from aiohttp import WSMsgType, web

Reply = dict[str, Any]
SOCKET_PATH = "/socket/{ticket}"


class SocketMode:
    def __init__(self, app_id: str = "A0FAKE") -> None:
        self.app_id = app_id
        self.refused: str | None = None        # the error every app token gets, when set
        self.opened = 0                        # apps.connections.open answered ok
        self.greeted = 0                       # sockets that got their hello
        self._tickets: set[str] = set()

    def register(self, app: web.Application) -> None:
        app.router.add_get(SOCKET_PATH, self._socket)

    def refuse(self, error: str = "invalid_auth") -> None:
        self.refused = error

    def open(self, token: str, origin: str) -> Reply:
        """apps.connections.open for `token`; `origin` is the fake's http://host:port."""
        if not token.startswith("xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        if self.refused:
            return {"ok": False, "error": self.refused}
        ticket = secrets.token_urlsafe(8)
        self._tickets.add(ticket)
        self.opened += 1
        return {"ok": True, "url": f"ws{origin.removeprefix('http')}/socket/{ticket}"}

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.match_info["ticket"]
        if ticket not in self._tickets:
            raise web.HTTPUnauthorized(text="unknown ticket")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "debug_info": {"host": "fake-socket", "build_number": 1,
                                           "approximate_connection_time": 18060},
                            "connection_info": {"app_id": self.app_id}})
        self.greeted += 1
        async for message in ws:   # envelopes the client acknowledges; nothing to do with them
            if message.type == WSMsgType.ERROR:
                break
        return ws
