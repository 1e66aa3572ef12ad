"""The REST API (aiohttp): submit, read, stream and measure debates.

Bearer-token auth when `DIALECTIC_API_TOKEN` is set; without one the server binds to 127.0.0.1
only (see bot/server.py). Bad input gets a 4xx with a clear message and changes nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.http.metrics import serve_metrics
from bot.scheduling.scheduler import Scheduler
from bot.service.runtime import Runtime
from engine.domain import MODES, DebateRequest
from engine.errors import BudgetExceeded, InvalidRequest
from engine.presets import all_presets
from storage import audit
from storage.errors import IllegalTransition, NotFound
from storage.records import TERMINAL_STATUSES, DebateStatus, Origin

log = logging.getLogger("dialectic.api")
RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime", Runtime)
SCHEDULER: web.AppKey[Scheduler] = web.AppKey("scheduler", Scheduler)
SLACK_ON: web.AppKey[bool] = web.AppKey("slack_on", bool)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
M = TypeVar("M", bound=BaseModel)
STREAM_POLL = 0.25


class DebateIn(BaseModel):
    """POST /api/debates and /api/estimate."""

    model_config = ConfigDict(extra="forbid")
    topic: str = Field(min_length=1, description="the proposition or question")
    mode: str | None = Field(default=None, description=f"one of {', '.join(MODES)}")
    preset: str | None = None
    rounds: int | None = Field(default=None, ge=0, le=5)
    judges: int | None = Field(default=None, ge=1, le=8)
    context: str = Field(default="", max_length=20000)
    options: dict[str, Any] = Field(default_factory=dict)
    no_cache: bool = False
    requested_by: str = Field(default="api", max_length=200)
    idempotency_key: str | None = Field(default=None, max_length=200)

    def request(self) -> DebateRequest:
        fields = self.model_dump(exclude={"idempotency_key", "mode"}, exclude_none=True)
        if self.mode is not None:
            if self.mode not in MODES:
                raise InvalidRequest(f"unknown mode {self.mode!r}; choose one of: "
                                     f"{', '.join(MODES)}")
            fields["mode"] = self.mode
        return DebateRequest.model_validate(fields)


def error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rt = request.app[RUNTIME]
    token = rt.settings.api_token
    if token is None or not request.path.startswith("/api/"):
        return await handler(request)
    secret = token.get_secret_value()
    sent = request.headers.get("Authorization", "")
    cookie = request.cookies.get("dialectic_token", "")  # the console's SameSite=Strict cookie
    if not (hmac.compare_digest(sent.encode(), f"Bearer {secret}".encode())
            or hmac.compare_digest(cookie.encode(), secret.encode())):
        return error(401, "missing or wrong bearer token (Authorization: Bearer …)")
    return await handler(request)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status == 413:
            return error(413, "request body too large")
        raise
    except InvalidRequest as exc:
        return error(400, str(exc))
    except NotFound as exc:
        return error(404, str(exc))
    except IllegalTransition as exc:
        return error(409, str(exc))
    except BudgetExceeded as exc:
        return error(402, str(exc), estimate_usd=exc.estimate_usd,
                     remaining_usd=exc.remaining_usd)


async def _parse(request: web.Request, model: type[M]) -> M:
    """The JSON body as `model`, or InvalidRequest saying exactly what is wrong."""
    try:
        raw = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidRequest("the body is not valid JSON") from None
    if not isinstance(raw, dict):
        raise InvalidRequest("the body must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                             for e in exc.errors())
        raise InvalidRequest(problems) from None


async def _body(request: web.Request) -> DebateIn:
    return await _parse(request, DebateIn)


async def post_debate(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request)
    sub = await rt.service.submit(body.request(), origin=Origin(surface="api"),
                                  idempotency_key=body.idempotency_key)
    rt.notify_workers()
    status = 200 if (sub.cached or sub.duplicate) else 202
    return web.json_response({
        "id": sub.record.id, "status": sub.record.status.value, "mode": sub.record.mode,
        "estimate": sub.estimate.model_dump(mode="json"), "cached": sub.cached,
        "duplicate": sub.duplicate, "downgraded_from": sub.downgraded_from,
        "rehearsal": rt.is_rehearsal,
        "links": {"self": f"/api/debates/{sub.record.id}",
                  "events": f"/api/debates/{sub.record.id}/events",
                  "transcript": rt.url(sub.record.id)},
    }, status=status)


async def post_estimate(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request)
    estimate = await rt.service.estimate(body.request())
    return web.json_response(estimate.model_dump(mode="json"))


async def get_debate(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    record = await rt.service.get(request.match_info["id"])
    return web.json_response(record.model_dump(mode="json"))


async def list_debates(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    status = request.query.get("status")
    if status is not None and status not in {s.value for s in DebateStatus}:
        raise InvalidRequest(f"unknown status {status!r}")
    try:
        limit = min(max(int(request.query.get("limit", "50")), 1), 500)
    except ValueError:
        raise InvalidRequest("limit must be a whole number") from None
    records = await rt.service.recent(status=status, limit=limit)
    return web.json_response({"debates": [_brief(r) for r in records]})


def _brief(r: Any) -> dict[str, Any]:
    return {"id": r.id, "topic": r.request.topic, "mode": r.mode, "preset": r.preset,
            "status": r.status.value, "cost_usd": r.cost_usd,
            "created_at": r.created_at.isoformat(),
            "verdict": r.result.verdict if r.result else None}


async def retry_debate(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    record = await rt.service.retry(request.match_info["id"], actor="api")
    rt.notify_workers()
    return web.json_response({"id": record.id, "status": record.status.value}, status=202)


class ReplayIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rounds: int | None = Field(default=None, ge=1, le=3)
    synthesizer: str | None = Field(default=None, max_length=200)


async def replay_debate(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _parse(request, ReplayIn)
    sub = await rt.service.replay(request.match_info["id"], more_rounds=body.rounds,
                                  synthesizer=body.synthesizer, actor="api",
                                  origin=Origin(surface="api"))
    rt.notify_workers()
    return web.json_response({"id": sub.record.id, "parent_id": sub.record.parent_id,
                              "status": sub.record.status.value,
                              "estimate": sub.estimate.model_dump(mode="json")}, status=202)


class BriefIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = Field(min_length=1, max_length=4000)
    at: datetime = Field(description="meeting time, ISO 8601 with a UTC offset")
    channel: str = Field(min_length=1, max_length=100)
    requested_by: str = Field(default="api", max_length=200)


async def post_brief(request: web.Request) -> web.Response:
    """Plan a pre-meeting brief: a `brief` debate that finishes and posts before `at`."""
    scheduler = request.app[SCHEDULER]
    body = await _parse(request, BriefIn)
    if body.at.tzinfo is None:
        raise InvalidRequest("at: give the meeting time with a UTC offset, e.g. "
                             "2026-11-23T09:30:00+01:00")
    plan = await scheduler.plan_brief(topic=body.topic, at=body.at, channel=body.channel,
                                      requested_by=body.requested_by)
    return web.json_response(dataclasses.asdict(plan), status=201, dumps=_dumps)


async def get_schedules(request: web.Request) -> web.Response:
    views = await request.app[SCHEDULER].views()
    return web.json_response({"schedules": [dataclasses.asdict(v) for v in views]},
                             dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


async def stream_events(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events from the debate's audit chain: live, resumable with Last-Event-ID."""
    rt = request.app[RUNTIME]
    debate_id = request.match_info["id"]
    await rt.service.get(debate_id)  # 404 before the stream starts
    after = int(request.headers.get("Last-Event-ID", request.query.get("after", "0")) or 0)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    await resp.write(b"retry: 2000\n\n")
    idle = 0.0
    while True:
        async with rt.db.transaction(readonly=True) as session:
            events = await audit.events(session, debate_id, after_seq=after)
        for ev in events:
            after = ev.seq
            payload = json.dumps({"seq": ev.seq, "kind": ev.kind, "actor": ev.actor,
                                  "at": ev.at.isoformat(), "data": ev.data}, default=str)
            await resp.write(f"id: {ev.seq}\nevent: {ev.kind}\ndata: {payload}\n\n".encode())
        if not events and await _finished(rt, debate_id):
            break
        idle = 0.0 if events else idle + STREAM_POLL
        if idle >= 15:
            await resp.write(b": keep-alive\n\n")
            idle = 0.0
        await asyncio.sleep(STREAM_POLL)
    await resp.write_eof()
    return resp


async def _finished(rt: Runtime, debate_id: str) -> bool:
    record = await rt.service.get(debate_id)
    return record.status in TERMINAL_STATUSES or record.status is DebateStatus.AWAITING_REVIEW


async def metrics(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    return web.json_response(await rt.metrics())


async def budget(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    return web.json_response(await rt.service.budget_today())


async def presets(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    return web.json_response({n: p.model_dump(mode="json")
                              for n, p in all_presets(rt.engine).items()})


async def healthz(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    ok = await rt.db.ping()
    return web.json_response({"ok": ok, "rehearsal": rt.is_rehearsal,
                              "slack": request.app[SLACK_ON],
                              "workers": rt.worker_slots()}, status=200 if ok else 503)


async def openapi(request: web.Request) -> web.Response:
    schema = DebateIn.model_json_schema()
    ok = {"200": {"description": "OK"}}
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "Dialectic", "version": "0.1.0",
                 "description": "Adversarial multi-agent LLM debates with judges and review."},
        "components": {"schemas": {"DebateIn": schema},
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/api/debates": {
                "post": {"summary": "Submit a debate (202 with id and estimate)",
                         "requestBody": {"content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/DebateIn"}}}},
                         "responses": {"202": {"description": "queued"},
                                       "200": {"description": "cached or duplicate"},
                                       "400": {"description": "bad input"},
                                       "402": {"description": "over the daily budget"}}},
                "get": {"summary": "Recent debates", "parameters": [
                    {"name": "status", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                    "responses": ok}},
            "/api/debates/{id}": {"get": {"summary": "Status and result", "responses": ok}},
            "/api/debates/{id}/events": {"get": {"summary": "Live events (SSE)",
                                                 "responses": ok}},
            "/api/debates/{id}/retry": {"post": {"summary": "Retry a failed debate",
                                                 "responses": ok}},
            "/api/debates/{id}/replay": {"post": {"summary": "Replay: more rounds or another "
                                                  "synthesizer", "responses": ok}},
            "/api/briefs": {"post": {"summary": "Plan a pre-meeting brief {topic, at, channel}",
                                     "responses": {"201": {"description": "planned"}}}},
            "/api/schedules": {"get": {"summary": "Schedules and their next firing",
                                       "responses": ok}},
            "/api/estimate": {"post": {"summary": "Planned calls and cost", "responses": ok}},
            "/api/metrics": {"get": {"summary": "Service metrics", "responses": ok}},
            "/api/budget": {"get": {"summary": "Today's budget", "responses": ok}},
            "/api/presets": {"get": {"summary": "Presets", "responses": ok}},
            "/healthz": {"get": {"summary": "Health", "security": [], "responses": ok}},
        },
    }
    return web.json_response(doc)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/api/debates", post_debate)
    app.router.add_get("/api/debates", list_debates)
    app.router.add_get("/api/debates/{id}", get_debate)
    app.router.add_get("/api/debates/{id}/events", stream_events)
    app.router.add_post("/api/debates/{id}/retry", retry_debate)
    app.router.add_post("/api/debates/{id}/replay", replay_debate)
    app.router.add_post("/api/estimate", post_estimate)
    app.router.add_post("/api/briefs", post_brief)
    app.router.add_get("/api/schedules", get_schedules)
    app.router.add_get("/api/metrics", metrics)
    app.router.add_get("/api/budget", budget)
    app.router.add_get("/api/presets", presets)
    app.router.add_get("/api/openapi.json", openapi)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", serve_metrics)
