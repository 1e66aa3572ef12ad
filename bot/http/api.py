"""The REST API: submit, estimate, read, retry and replay debates; plan briefs; read schedules,
metrics, budget and presets. Each handler gets its input parsed by the route table (routes.py)
and answers through the type its documented reply names, so the document says what it does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.http import errors as err
from bot.http import scoping
from bot.http.routes import (
    Reply,
    Route,
    dumps,
    json_reply,
    route,
    route_with_body,
    route_with_query,
)
from bot.http.sse import EventsQuery, stream_events
from bot.http.state import RUNTIME, SCHEDULER, SLACK_ON
from bot.scheduling.reports import BriefPlan, ScheduleView
from bot.service.delivery import delivery_problem
from bot.service.results import evaluation_of, is_incomplete, marks, missing_count, status_words
from engine.core.presets import all_presets
from engine.domain import DebateRequest, Estimate
from engine.settings import PresetSpec
from engine.vocabulary import MAX_LISTED, MAX_REPLAY_ROUNDS, MAX_TOPIC_CHARS, Mode
from storage.records import DebateRecord, DebateStatus, Origin

MAX_CONTEXT_CHARS = 20_000   # what an API caller may hand the debaters as background
MAX_NAME_CHARS = 200         # requester names, idempotency keys, synthesizer models


class DebateIn(DebateRequest):
    """A debate request as the API takes it: DebateRequest's fields and limits, unknown fields
    refused, plus an idempotency key."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # Absent or null, the preset decides (engine.core.debate.prepare); DebateRequest's own default
    # would tell API clients "consensus", which is only the default preset's choice.
    mode: Mode | None = Field(  # type: ignore[assignment]  # None here means "the preset's"
        default=None, description="the protocol; the preset's mode when omitted")
    # Limits only a caller over HTTP gets: the thread a Slack debate carries is not capped.
    context: str = Field(default="", max_length=MAX_CONTEXT_CHARS,
                         description="background the debaters see (e.g. a thread)")
    requested_by: str = Field(default="api", max_length=MAX_NAME_CHARS)
    idempotency_key: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS,
        description="the same key again returns the first debate instead of a new one")
    spotlight_nonce: str = Field(default="", description="set by the service for every debate, "
                                 "never by a caller: leave it out")

    @field_validator("spotlight_nonce")
    @classmethod
    def _nonce_is_the_services(cls, value: str) -> str:
        if value:
            raise ValueError("the service sets each debate's spotlight nonce; leave it out")
        return value

    def request(self) -> DebateRequest:
        """The DebateRequest, with the fields not given left unset so the preset decides."""
        fields = self.model_dump(exclude={"idempotency_key"}, exclude_none=True)
        return DebateRequest.model_validate(fields)


class DebateLinks(BaseModel):
    api: str = Field(alias="self", description="this debate in the API")
    events: str = Field(description="its live events (SSE)")
    transcript: str = Field(description="its console page (signed when a token is set)")


class SubmittedOut(BaseModel):
    id: str
    status: DebateStatus
    mode: str
    estimate: Estimate
    cached: bool = Field(description="an earlier debate's result, reused")
    duplicate: bool = Field(description="the idempotency key was seen before")
    downgraded_from: str | None = Field(description="the mode asked for, when the budget "
                                                    "ran a cheaper one")
    rehearsal: bool = Field(description="no model is configured: placeholder arguments")
    links: DebateLinks


class DebateSummaryOut(BaseModel):
    id: str
    topic: str
    mode: str
    preset: str
    status: DebateStatus
    incomplete: bool = Field(description="finished with parts missing (degraded or filtered "
                                         "steps, or it failed): see the debate's result.missing")
    missing: int = Field(description="how many parts are missing (0 until it finishes)")
    status_text: str = Field(description="the status as lists say it, e.g. "
                                         "'completed, incomplete'")
    cost_usd: float
    created_at: datetime
    verdict: str | None
    evaluation: str | None = Field(default=None, description="the evaluation run whose debate "
                                   "this is (`dialectic eval`; kept out of oversight unless "
                                   "it ran with --review), else null")
    marks: list[str] = Field(default_factory=list, description="what to know before trusting "
                             "it, as `dialectic list` and the console say it")

    @classmethod
    def of(cls, r: DebateRecord) -> DebateSummaryOut:
        return cls(id=r.id, topic=r.request.topic, mode=r.mode, preset=r.preset, status=r.status,
                   incomplete=r.result is not None and is_incomplete(r.result),
                   missing=missing_count(r.result), status_text=status_words(r.status, r.result),
                   cost_usd=r.cost_usd, created_at=r.created_at,
                   verdict=r.result.verdict if r.result else None,
                   evaluation=r.origin.evaluation_id if evaluation_of(r) else None,
                   marks=[m.text for m in marks(r)])


class DebateListOut(BaseModel):
    debates: list[DebateSummaryOut]


class ListQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    status: DebateStatus | None = Field(default=None, description="only debates in this state")
    limit: int = Field(default=50, description=f"how many, newest first (1 to {MAX_LISTED})")

    @field_validator("limit")
    @classmethod
    def _within_range(cls, limit: int) -> int:
        return min(max(limit, 1), MAX_LISTED)


class RetriedOut(BaseModel):
    id: str
    status: DebateStatus


class ReplayIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rounds: int | None = Field(default=None, ge=1, le=MAX_REPLAY_ROUNDS,
                               description="rounds to add: simple rebuttal, structured and "
                               "consensus cross-examination, panel reflection, critique "
                               "rounds; refused for redteam")
    synthesizer: str | None = Field(default=None, max_length=MAX_NAME_CHARS,
                                    description="another model for the final steps (verdict, "
                                    "judges, synthesis, final answer)")
    no_cache: bool = Field(default=False, description="replay anew even when the same replay "
                           "of this debate finished within the cache window")


class ReplayedOut(BaseModel):
    id: str
    parent_id: str | None
    status: DebateStatus
    estimate: Estimate
    cached: bool = Field(default=False, description="the same replay of this debate, finished "
                         "within the cache window: its result, reused (estimate.cached_from)")


class BriefIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = Field(min_length=1, max_length=MAX_TOPIC_CHARS)
    at: datetime = Field(description="meeting time, ISO 8601 with a UTC offset")
    channel: str = Field(min_length=1, max_length=100, description="Slack channel id")
    requested_by: str = Field(default="api", max_length=MAX_NAME_CHARS)

    @field_validator("at")
    @classmethod
    def _with_offset(cls, at: datetime) -> datetime:
        if at.tzinfo is None:
            raise ValueError("give the meeting time with a UTC offset, e.g. "
                             "2026-11-23T09:30:00+01:00")
        return at


class SchedulesOut(BaseModel):
    schedules: list[ScheduleView]


class HealthOut(BaseModel):
    ok: bool = Field(description="the database takes writes and a worker can claim debates")
    problems: list[str] = Field(description="why not, one sentence each; empty when ok")
    rehearsal: bool
    slack: bool = Field(description="Slack is configured and reachable (Socket Mode connected)")
    slack_problem: str | None = Field(default=None,
                                      description="why Slack is not reachable, when it is not")
    workers: int = Field(description="worker slots in this process")
    deliveries_pending: int = Field(
        default=0, description="results and review requests owed to Slack, not yet delivered "
                               "(any process delivers them; retried with backoff)")
    deliveries_failed: int = Field(
        default=0, description="owed to Slack and given up after every retry (the console's "
                               "Deliveries page lists them, with why, and retries them)")
    delivery_problem: str | None = Field(
        default=None, description="why deliveries to Slack are late or failing, when they are")


async def post_debate(request: web.Request, body: DebateIn) -> web.Response:
    """Estimate, reserve against today's budget and queue; a cached result or a repeated
    idempotency key answers 200 with the existing debate."""
    rt = request.app[RUNTIME]
    sub = await rt.service.submit(body.request(), origin=Origin(surface="api"),
                                  idempotency_key=body.idempotency_key)
    rt.notify_workers()
    record = sub.record
    links = DebateLinks.model_validate({"self": f"/api/debates/{record.id}",
                                        "events": f"/api/debates/{record.id}/events",
                                        "transcript": rt.url(record.id)})
    out = SubmittedOut(id=record.id, status=record.status, mode=record.mode,
                       estimate=sub.estimate, cached=sub.cached, duplicate=sub.duplicate,
                       downgraded_from=sub.downgraded_from, rehearsal=rt.is_rehearsal,
                       links=links)
    return json_reply(out, status=200 if (sub.cached or sub.duplicate) else 202)


async def post_estimate(request: web.Request, body: DebateIn) -> web.Response:
    """The calls, critical path, tokens and dollars the debate would take; nothing is run."""
    estimate = await request.app[RUNTIME].service.estimate(body.request())
    return json_reply(estimate)


async def get_debate(request: web.Request) -> web.Response:
    """The debate's request, lifecycle, cost and (once finished) result."""
    return json_reply(await scoping.debate(request, request.match_info["id"]))


async def list_debates(request: web.Request, query: ListQuery) -> web.Response:
    """The newest debates first."""
    records = await scoping.recent(request, status=query.status, limit=query.limit)
    return json_reply(DebateListOut(debates=[DebateSummaryOut.of(r) for r in records]))


async def retry_debate(request: web.Request) -> web.Response:
    """Queue a failed or timed-out debate again; its finished steps are reused."""
    rt = request.app[RUNTIME]
    record = await rt.service.retry(request.match_info["id"], actor="api")
    rt.notify_workers()
    return json_reply(RetriedOut(id=record.id, status=record.status), status=202)


async def replay_debate(request: web.Request, body: ReplayIn) -> web.Response:
    """A new debate from a finished one: more rounds or another synthesizer."""
    rt = request.app[RUNTIME]
    sub = await rt.service.replay(request.match_info["id"], more_rounds=body.rounds,
                                  synthesizer=body.synthesizer, actor="api",
                                  origin=Origin(surface="api"), no_cache=body.no_cache)
    rt.notify_workers()
    out = ReplayedOut(id=sub.record.id, parent_id=sub.record.parent_id,
                      status=sub.record.status, estimate=sub.estimate, cached=sub.cached)
    return json_reply(out, status=200 if sub.cached else 202)


async def post_brief(request: web.Request, body: BriefIn) -> web.Response:
    """Plan a pre-meeting brief: a `brief` debate that finishes and posts before `at`."""
    plan = await request.app[SCHEDULER].plan_brief(
        topic=body.topic, at=body.at, channel=body.channel, requested_by=body.requested_by)
    return json_reply(plan, status=201)


async def get_schedules(request: web.Request) -> web.Response:
    """Every configured schedule, its next firing and whether it is paused."""
    return json_reply(SchedulesOut(schedules=await request.app[SCHEDULER].views()))


async def get_metrics(request: web.Request) -> web.Response:
    """Counts, latencies and costs from the database, with today's budget."""
    return web.json_response(await request.app[RUNTIME].metrics(), dumps=dumps)


async def get_budget(request: web.Request) -> web.Response:
    """Today's cap, spend, reservations and what is left, in dollars."""
    return web.json_response(await request.app[RUNTIME].service.budget_today(), dumps=dumps)


async def get_presets(request: web.Request) -> web.Response:
    """The presets by name: mode, personas, judges, thresholds."""
    return json_reply(all_presets(request.app[RUNTIME].engine), as_type=dict[str, PresetSpec])


async def healthz(request: web.Request) -> web.Response:
    """Whether this process can work: the database takes a write and a worker can claim; 503,
    saying why, when not."""
    rt = request.app[RUNTIME]
    health = await rt.health()
    slack_problem = rt.link_problems.get("slack")
    owed = await rt.deliveries()
    out = HealthOut(ok=health.ok, problems=list(health.problems), rehearsal=rt.is_rehearsal,
                    slack=request.app[SLACK_ON] and slack_problem is None,
                    slack_problem=slack_problem, workers=rt.worker_slots(),
                    deliveries_pending=owed.pending, deliveries_failed=owed.failed,
                    delivery_problem=delivery_problem(owed, now=rt.service.clock()))
    return json_reply(out, status=200 if health.ok else 503)


def _reply(description: str, schema: Any = None) -> Reply:
    return Reply(description=description, schema=schema)


ROUTES: tuple[Route, ...] = (
    route_with_body("/api/debates", DebateIn, post_debate, summary="Submit a debate",
                    replies={202: _reply("queued", SubmittedOut),
                             200: _reply("a cached result or a repeated idempotency key",
                                         SubmittedOut),
                             402: err.OVER_BUDGET, 409: err.KEY_REUSED}),
    route_with_query("/api/debates", ListQuery, list_debates, summary="Recent debates",
                     replies={200: _reply("the debates", DebateListOut)}),
    route("GET", "/api/debates/{id}", get_debate, summary="A debate: status and result",
          replies={200: _reply("the debate", DebateRecord), 404: err.NOT_FOUND}),
    route_with_query("/api/debates/{id}/events", EventsQuery, stream_events,
                     summary="Live events (Server-Sent Events)",
                     replies={200: Reply(description="the event stream",
                                         content_type="text/event-stream"),
                              404: err.NOT_FOUND}),
    route("POST", "/api/debates/{id}/retry", retry_debate, summary="Retry a failed debate",
          replies={202: _reply("queued again", RetriedOut), 400: err.BAD_INPUT,
                   402: err.OVER_BUDGET, 404: err.NOT_FOUND, 409: err.CONFLICT}),
    route_with_body("/api/debates/{id}/replay", ReplayIn, replay_debate,
                    summary="Replay with more rounds or another synthesizer",
                    replies={202: _reply("the replay, queued", ReplayedOut),
                             200: _reply("the same replay, finished within the cache window",
                                         ReplayedOut),
                             402: err.OVER_BUDGET, 404: err.NOT_FOUND}),
    route_with_body("/api/estimate", DebateIn, post_estimate, summary="Planned calls and cost",
                    replies={200: _reply("the estimate", Estimate)}),
    route_with_body("/api/briefs", BriefIn, post_brief, summary="Plan a pre-meeting brief",
                    replies={201: _reply("planned", BriefPlan)}),
    route("GET", "/api/schedules", get_schedules, summary="Schedules and their next firing",
          replies={200: _reply("the schedules", SchedulesOut)}),
    route("GET", "/api/metrics", get_metrics, summary="Service metrics",
          replies={200: _reply("the metrics")}),
    route("GET", "/api/budget", get_budget, summary="Today's budget",
          replies={200: _reply("day, cap_usd, spent_usd, reserved_usd, remaining_usd")}),
    route("GET", "/api/presets", get_presets, summary="Presets",
          replies={200: _reply("the presets by name", dict[str, PresetSpec])}),
    route("GET", "/healthz", healthz, summary="Health", tag="operations",
          replies={200: _reply("healthy", HealthOut),
                   503: _reply("unhealthy: `problems` says why", HealthOut)}),
)
