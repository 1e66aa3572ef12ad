"""`/mcp` on `dialectic serve`: the same MCP server over streamable HTTP, for assistants that reach
Dialectic over the network (docs/mcp.md). The SDK's session manager speaks ASGI; this module hands
it each aiohttp request and streams its answer back. Who may call it is the HTTP surface's rule
for the API (the API token as the bearer), applied before a request gets here; a reviewer's token
or sign-in (`read_only`, the HTTP surface's word) gets a server with the reading tools alone. The
Host and Origin checks are the HTTP surface's too, so the SDK's own are off.

The SDK is imported at the first request (or never): `serve` starts as fast as before."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.service.grants import ResourceGuard
from bot.service.runtime import Runtime

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger("dialectic.mcp")
PATH = "/mcp"
NOT_INSTALLED = ("MCP needs the `mcp` extra on this server: pip install -e '.[mcp]' (make "
                 "install includes it), then restart it")
Message = MutableMapping[str, Any]


class HttpEndpoint:
    """`/mcp`'s handler: a session manager for the full server and one for the reading tools
    alone, each started at its first request, both stopped by `close`."""

    def __init__(self, rt: Runtime, read_only: Callable[[web.Request], bool]) -> None:
        self.rt = rt
        self.read_only = read_only
        self._managers: dict[bool, StreamableHTTPSessionManager] = {}
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()

    async def _started(self, read_only: bool) -> StreamableHTTPSessionManager:
        async with self._lock:
            if read_only not in self._managers:
                self._managers[read_only] = await self._start(read_only)
            return self._managers[read_only]

    async def _start(self, read_only: bool) -> StreamableHTTPSessionManager:
        from mcp.server.transport_security import TransportSecuritySettings

        from bot.mcp.server import build_server

        server = build_server(self.rt, read_only=read_only)
        server.streamable_http_app(streamable_http_path=PATH, transport_security=(
            TransportSecuritySettings(enable_dns_rebinding_protection=False)))
        manager = server.session_manager
        running = asyncio.Event()
        self._tasks.append(asyncio.create_task(self._run(manager, running), name="mcp-http"))
        await running.wait()
        return manager

    async def _run(self, manager: StreamableHTTPSessionManager, running: asyncio.Event) -> None:
        async with manager.run():
            running.set()
            await self._stop.wait()

    async def close(self) -> None:
        self._stop.set()
        for task in self._tasks:
            await task

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            manager = await self._started(self.read_only(request))
        except ModuleNotFoundError as exc:   # a runtime-only install (`make run`)
            log.warning("a request to %s, but the MCP SDK is not installed (%s)", PATH, exc)
            return web.json_response({"error": NOT_INSTALLED}, status=501)
        body = await request.read()
        answer = _Answer(request)
        await manager.handle_request(_scope(request), _receiver(body), answer.send)
        return answer.response if answer.response is not None else web.Response(status=500)


def _scope(request: web.Request) -> dict[str, Any]:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": request.scheme, "path": request.path,
            "raw_path": request.raw_path.encode(), "root_path": "",
            "query_string": request.query_string.encode(),
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in request.headers.items()],
            "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
            "server": (request.host, None)}


def _receiver(body: bytes) -> Any:
    """The request's body once; then nothing until the exchange ends (its task is cancelled)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    return receive


class _Answer:
    """The ASGI answer written to aiohttp as it comes (a JSON reply, or an event stream)."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            self.response = response
            await response.prepare(self.request)
        elif message["type"] == "http.response.body" and self.response is not None:
            with contextlib.suppress(ConnectionResetError):   # the client left
                if message.get("body"):
                    await self.response.write(message["body"])
                if not message.get("more_body", False):
                    await self.response.write_eof()


def mount(app: web.Application, rt: Runtime, *, read_only: Callable[[web.Request], bool]
          ) -> ResourceGuard | None:
    """`/mcp` on the served application, and, when an identity provider signs MCP clients in,
    its resource metadata (RFC 9728) and the guard that checks its tokens (returned, for the
    HTTP surface's auth). The session manager stops when the application begins shutting down:
    the event streams it holds open end then, rather than hold up the shutdown."""
    endpoint = HttpEndpoint(rt, read_only)
    app.router.add_route("*", PATH, endpoint.handle)

    async def stop(_: web.Application) -> None:
        await endpoint.close()

    app.on_shutdown.append(stop)
    return _resource_server(app, rt)


def _resource_server(app: web.Application, rt: Runtime) -> ResourceGuard | None:
    settings = rt.settings
    if not settings.mcp_authorization_servers:
        return None
    try:
        from bot.mcp.authorization import METADATA_PATH, resource_server
    except ModuleNotFoundError as exc:   # a runtime-only install: /mcp answers 501 anyway
        log.warning("DIALECTIC_MCP_AUTHORIZATION_SERVERS is set, but the MCP SDK is not "
                    "installed (%s): /mcp answers 501", exc)
        return None
    server = resource_server(issuers=settings.mcp_authorization_servers,
                             audience=settings.mcp_audience, public_url=settings.public_url)
    if server is None:
        return None

    async def metadata(_: web.Request) -> web.Response:
        return web.json_response(server.metadata(), headers={"Cache-Control": "max-age=300"})

    # RFC 9728 §3.1: the path of the resource after the well-known part; and at the root, where
    # clients of the 2025-06-18 revision look first
    app.router.add_get(METADATA_PATH + PATH, metadata)
    app.router.add_get(METADATA_PATH, metadata)
    return server


__all__ = ["NOT_INSTALLED", "PATH", "HttpEndpoint", "mount"]
