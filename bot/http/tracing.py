"""Each API request as a server span (docs/tracing.md), continuing the caller's trace when it
sends a W3C `traceparent` header; the debate it queues carries the span's context to the worker.
The event streams (long-lived) and the console's pages are not traced.

Trace headers are checked on every API request, traced or not, by W3C Trace Context's rules
(`trace_context_problem`): a malformed one is a 400 and one warning line, never a traceback.
    traceparent  version-traceid-parentid-flags in lowercase hex; version ff is invalid;
                 version 00 has exactly these 4 fields (55 characters); a higher version may
                 add fields after a dash; neither id may be all zeros; one header only
    tracestate   at most 32 list members `key=value` (keys unique), at most 512 characters
                 in all (the length the spec asks every vendor to carry)
"""

from __future__ import annotations

import logging
import re

from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import MultiMapping

from bot.http.errors import error
from bot.service.tracing import tracing

log = logging.getLogger("dialectic.http.tracing")

#: version 00: "00-" 32 hex "-" 16 hex "-" 2 hex
TRACEPARENT_00 = 55
MAX_TRACESTATE_MEMBERS = 32
MAX_TRACESTATE = 512
_TRACEPARENT = re.compile(r"(?P<version>[0-9a-f]{2})-(?P<trace>[0-9a-f]{32})-"
                          r"(?P<parent>[0-9a-f]{16})-(?P<flags>[0-9a-f]{2})(?P<rest>-.*)?",
                          re.DOTALL)
_KEY = re.compile(r"[a-z0-9][a-z0-9_\-*/@]{0,255}")
_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")


def traced_path(path: str) -> bool:
    return path.startswith("/api/") and not path.endswith("/events")


def traceparent_problem(value: str) -> str | None:
    """What is wrong with a `traceparent` value, or None when it follows W3C's rules."""
    found = _TRACEPARENT.fullmatch(value)
    if found is None:
        return ("traceparent must be version-traceid-parentid-flags in lowercase hex "
                "(00-<32 hex>-<16 hex>-<2 hex>)")
    if found["version"] == "ff":
        return "traceparent version ff is invalid"
    if found["version"] == "00" and found["rest"] is not None:
        return "traceparent version 00 has exactly 4 fields"
    if found["trace"] == "0" * 32 or found["parent"] == "0" * 16:
        return "traceparent ids must not be all zeros"
    return None


def tracestate_problem(value: str) -> str | None:
    """What is wrong with a (combined) `tracestate` value, or None."""
    if len(value) > MAX_TRACESTATE:
        return f"tracestate is {len(value):,} characters; at most {MAX_TRACESTATE} are taken"
    members = [m.strip(" \t") for m in value.split(",")]
    members = [m for m in members if m]   # empty members are allowed, and ignored
    if len(members) > MAX_TRACESTATE_MEMBERS:
        return f"tracestate has {len(members)} members; at most {MAX_TRACESTATE_MEMBERS}"
    keys: set[str] = set()
    for member in members:
        key, sep, member_value = member.partition("=")
        if not sep or not _KEY.fullmatch(key) or not _VALUE.fullmatch(member_value):
            return "tracestate members are key=value (W3C Trace Context's characters)"
        if key in keys:
            return "tracestate names a key twice"
        keys.add(key)
    return None


def trace_context_problem(headers: MultiMapping[str]) -> str | None:
    """What is wrong with the request's trace headers, or None (absent ones are fine)."""
    parents = headers.getall("traceparent", [])
    if len(parents) > 1:
        return "send one traceparent header"
    if parents and (problem := traceparent_problem(parents[0])) is not None:
        return problem
    states = headers.getall("tracestate", [])   # several are one list, joined by commas
    return tracestate_problem(",".join(states)) if states else None


@web.middleware
async def trace_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not traced_path(request.path):
        return await handler(request)
    problem = trace_context_problem(request.headers)
    if problem is not None:
        log.warning("refused %s %s from %s: %s", request.method, request.path, request.remote,
                    problem)
        return error(400, problem)
    traces = tracing()
    if not traces.enabled:
        return await handler(request)
    parent = request.headers.get("traceparent") or None
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
