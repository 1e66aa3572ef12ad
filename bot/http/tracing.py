"""Each API request as a server span (README "Tracing"), continuing the caller's trace when it
sends a W3C `traceparent` header; the debate it queues carries the span's context to the worker.
The event streams (long-lived) and the console's pages are not traced."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.service.tracing import tracing

#: a W3C traceparent: version, trace id, parent id, flags (the propagator checks the rest)
MAX_TRACEPARENT = 55


def traced_path(path: str) -> bool:
    return path.startswith("/api/") and not path.endswith("/events")


@web.middleware
async def trace_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    traces = tracing()
    if not traces.enabled or not traced_path(request.path):
        return await handler(request)
    parent = request.headers.get("traceparent", "")[:MAX_TRACEPARENT] or None
    route = request.match_info.route.resource
    template = route.canonical if route is not None else request.path
    attributes = {"http.request.method": request.method, "url.path": request.path,
                  "http.route": template}
    with traces.span(f"{request.method} {template}", attributes, kind="server",
                     parent=parent) as span:
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            span.set({"http.response.status_code": exc.status})
            if exc.status >= 500:
                span.fail(str(exc.status))
            raise
        span.set({"http.response.status_code": response.status})
        if response.status >= 500:
            span.fail(str(response.status))
        return response
