"""Slack's Socket Mode, as the fake Slack serves it (api.slack.com/apis/socket-mode): an
app-level token (`xapp-…`) opens a connection with `apps.connections.open`, which answers a
WebSocket URL; the socket greets the client with a `hello` envelope and answers pings. A bot
token is `not_allowed_token_type`; a refused app token (`refuse`) is `invalid_auth`, as a
revoked one is. `deliver(body)` sends an event over the open socket in Slack's `events_api`
envelope (`kind="slash_commands"`: a slash command's fields, as Slack sends a command over the
socket) and returns the client's acknowledgement (the envelope id echoed back)."""

from __future__ import annotations

import asyncio
import json
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
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Future[dict[str, Any]]] = {}

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
        self._sockets.append(ws)
        try:
            async for message in ws:   # the client's acknowledgements of delivered envelopes
                if message.type == WSMsgType.ERROR:
                    break
                if message.type == WSMsgType.TEXT:
                    self._acknowledged(json.loads(message.data))
        finally:
            self._sockets.remove(ws)
        return ws

    async def deliver(self, body: dict[str, Any], *, kind: str = "events_api",
                      timeout: float = 5.0) -> dict[str, Any]:
        """Send an Events API body (as it would be POSTed) or a slash command's fields over the
        socket; the client's ack."""
        if not self._sockets:
            raise RuntimeError("no Socket Mode connection is open")
        envelope_id = secrets.token_hex(8)
        acked = self._acks[envelope_id] = asyncio.get_running_loop().create_future()
        await self._sockets[-1].send_json({
            "envelope_id": envelope_id, "type": kind, "payload": body,
            "accepts_response_payload": False, "retry_attempt": 0, "retry_reason": ""})
        try:
            return await asyncio.wait_for(acked, timeout)
        finally:
            self._acks.pop(envelope_id, None)

    def _acknowledged(self, ack: dict[str, Any]) -> None:
        waiting = self._acks.get(str(ack.get("envelope_id") or ""))
        if waiting is not None and not waiting.done():
            waiting.set_result(ack)
