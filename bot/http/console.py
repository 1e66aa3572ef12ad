"""The web console: the recent debates with a form to start one, the debate page Slack links to
(live while the debate runs: the page follows its SSE stream and re-renders its body from
`/debates/{id}/live`), and the review queue. Handlers gather the values; the pages are pure
functions of them over the Jinja2 templates (pages.py), so they render the same in a test as in
a browser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import scoping, session
from bot.http.auth import console_allowed, console_login, reviewer_of
from bot.http.pages import StaticQuery, html, render, static_file
from bot.http.routes import Reply, Route, route, route_with_query
from bot.http.state import RUNTIME
from bot.http.views import Badge, badges, judge_rows, routing_story, usd
from bot.service.grants import Identity
from bot.service.results import alpha_text, is_incomplete, routed_by, thresholds_for
from bot.service.timeline import Timeline, load_timeline
from bot.service.words import counted
from engine.core.presets import all_presets
from engine.domain import EventKind
from engine.settings import EngineSettings, PresetSpec
from engine.vocabulary import MAX_TOPIC_CHARS, Mode, choices
from storage.errors import NotFound
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Review

DEFAULT_PRESET = "default"
#: The events after which the live page re-renders its body (and "settled": the stream's end).
LIVE_KINDS = (*choices(EventKind), "status_changed", "review_decided", "settled")


@dataclass(frozen=True, slots=True)
class Row:
    record: DebateRecord
    badges: list[Badge]


def index_page(*, records: Sequence[DebateRecord], budget: Mapping[str, float | str],
               presets: Mapping[str, PresetSpec], rehearsal: bool,
               viewer: Identity | None = None) -> str:
    rows = [Row(r, badges(r, rehearsal=rehearsal)) for r in records]
    default = DEFAULT_PRESET if DEFAULT_PRESET in presets else min(presets, default="")
    return render("index.html", rows=rows, budget=budget, presets=sorted(
        presets.values(), key=lambda p: (p.name != default, p.name)), default_preset=default,
        modes=choices(Mode), rehearsal=rehearsal, max_topic=MAX_TOPIC_CHARS, viewer=viewer,
        nav="debates")


def locked_page() -> str:
    return render("locked.html")


def settled(record: DebateRecord) -> bool:
    return record.status in TERMINAL_STATUSES or record.status is DebateStatus.AWAITING_REVIEW


def _progress_line(record: DebateRecord, timeline: Timeline) -> str:
    if record.result is not None:
        result = record.result
        return (f"Finished: {record.status.value.replace('_', ' ')} · {usd(result.cost.usd)} · "
                f"{counted(result.cost.calls, 'call')}")
    if record.status is DebateStatus.QUEUED:
        return "Queued: waiting for a worker."
    progress = timeline.progress
    phases = progress.phases()
    done = sum(1 for p in phases if p.finished)
    running = [p.name for p in phases if p.state.value == "running"]
    now = f", now {', '.join(running)}" if running else ""
    return (f"Running: {done} of {len(phases)} phases finished{now} · "
            f"{usd(progress.cost_usd)} so far · {timeline.elapsed_seconds:.0f} s")


def body_context(engine: EngineSettings, record: DebateRecord, *, timeline: Timeline,
                 review: Review | None, reviewer: str | None, rehearsal: bool
                 ) -> dict[str, Any]:
    """What partials/debate_body.html reads (the page and its live fragment alike)."""
    result = record.result
    thresholds = (routed_by(engine, result) if result is not None
                  else thresholds_for(engine, record.preset))
    banner = rehearsal and (result is None or result.rehearsal)
    context: dict[str, Any] = {
        "record": record, "badges": badges(record, rehearsal=rehearsal), "rehearsal": banner,
        "timeline": timeline, "thresholds": thresholds, "review": review,
        "reviewer": reviewer, "progress_line": _progress_line(record, timeline)}
    if result is not None:
        context.update(incomplete=is_incomplete(result), judges=judge_rows(result, timeline),
                       story=routing_story(result, thresholds, review, record.origin))
    return context


def transcript_page(engine: EngineSettings, record: DebateRecord, *, timeline: Timeline,
                    review: Review | None = None, reviewer: str | None = None,
                    rehearsal: bool = False, viewer: Identity | None = None, link: str = ""
                    ) -> str:
    """The debate page; `rehearsal`: this process runs without a model (the banner shows unless
    the debate's own result says it was argued by one); `link`: the query of the transcript
    link the page was opened with (`?exp=…&sig=…`), which its live requests carry on."""
    context = body_context(engine, record, timeline=timeline, review=review, reviewer=reviewer,
                           rehearsal=rehearsal)
    return render("transcript.html", live=not settled(record), live_kinds=LIVE_KINDS,
                  viewer=viewer, nav="debates", link=link, **context)


def live_fragment(engine: EngineSettings, record: DebateRecord, *, timeline: Timeline,
                  review: Review | None = None, reviewer: str | None = None,
                  rehearsal: bool = False) -> str:
    context = body_context(engine, record, timeline=timeline, review=review, reviewer=reviewer,
                           rehearsal=rehearsal)
    return render("partials/debate_body.html", **context)


def link_query(sig: str, exp: str) -> str:
    """The signed link's query, for the page's own requests; "" without a signature."""
    return f"?{urlencode({'exp': exp, 'sig': sig})}" if sig else ""


class IndexQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token: str | None = Field(default=None, description="the API token: begins the console's "
                                                        "session")


class TranscriptQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sig: str = Field(default="", description="the signature a transcript link carries")
    exp: str = Field(default="", description="when the link expires (Unix seconds)")


async def index(request: web.Request, query: IndexQuery) -> web.Response:
    """Today's budget, a form to start a debate, the 50 newest debates."""
    login = await console_login(request, query.token)
    if login is not None:
        return login
    if not console_allowed(request):
        return html(locked_page())
    rt = request.app[RUNTIME]
    page = index_page(records=await scoping.recent(request, limit=50),
                      budget=await scoping.budget(request), presets=all_presets(rt.engine),
                      rehearsal=rt.is_rehearsal, viewer=session.current(request))
    return html(page)


def message_page(heading: str, text: str, *, back: str = "/",
                 viewer: Identity | None = None) -> str:
    return render("message.html", heading=heading, text=text, back=back, viewer=viewer)


async def _debate(request: web.Request, sig: str, exp: str
                  ) -> tuple[DebateRecord, Timeline, Review | None]:
    """The debate, its timeline and review; an HTML page saying why not (403, 404) otherwise."""
    debate_id = request.match_info["id"]
    if not console_allowed(request, debate_id=debate_id, signature=sig, expires=exp):
        raise web.HTTPForbidden(content_type="text/html", text=message_page(
            "This debate is private", "Open it from the link Slack or your operator gave you, "
            "or sign in to the console.", back=f"/signin?to=/debates/{debate_id}"))
    rt = request.app[RUNTIME]
    try:
        record = await scoping.debate(request, debate_id)
    except NotFound:   # unknown, or not this sign-in's workspace's: the same page
        raise web.HTTPNotFound(content_type="text/html", text=message_page(
            "No such debate", f"There is no debate {debate_id!r} here: it may have been "
            "started on another service.", viewer=session.current(request))) from None
    timeline = await load_timeline(rt.engine, rt.db, record)
    return record, timeline, await rt.reviews.for_debate(debate_id)


async def transcript(request: web.Request, query: TranscriptQuery) -> web.Response:
    """One debate's page; while it runs, it follows the debate's events live."""
    record, timeline, review = await _debate(request, query.sig, query.exp)
    rt = request.app[RUNTIME]
    return html(transcript_page(rt.engine, record, timeline=timeline, review=review,
                                reviewer=reviewer_of(request), rehearsal=rt.is_rehearsal,
                                viewer=session.current(request),
                                link=link_query(query.sig, query.exp)))


async def live(request: web.Request, query: TranscriptQuery) -> web.Response:
    """The debate page's body as it stands now (what the page swaps in on each event)."""
    record, timeline, review = await _debate(request, query.sig, query.exp)
    rt = request.app[RUNTIME]
    fragment = live_fragment(rt.engine, record, timeline=timeline, review=review,
                             reviewer=reviewer_of(request), rehearsal=rt.is_rehearsal)
    return web.Response(text=fragment, content_type="text/html",
                        headers={"Cache-Control": "no-store"})


@dataclass(frozen=True, slots=True)
class QueueItem:
    review: Review
    record: DebateRecord
    badges: list[Badge]
    alpha: str


async def review_queue(request: web.Request) -> web.Response:
    """Every debate waiting for a reviewer, oldest first, with why it waits."""
    if not console_allowed(request):
        return html(locked_page())
    rt = request.app[RUNTIME]
    items = []
    for review in await scoping.pending_reviews(request):
        record = await scoping.debate(request, review.debate_id)
        c = record.result.consensus if record.result is not None else None
        alpha = "" if c is None or record.result is None else alpha_text(
            c.alpha, routed_by(rt.engine, record.result))
        items.append(QueueItem(review, record, badges(record), alpha))
    page = render("reviews.html", items=items, reviewer=reviewer_of(request),
                  viewer=session.current(request), nav="reviews")
    return html(page)


PAGE = Reply(description="the page (without a session: how to sign in)",
             content_type="text/html")
FORBIDDEN = Reply(description="neither the console's session nor a signed link: a page "
                              "saying how to open it", content_type="text/html")
MISSING = Reply(description="no such debate: a page saying so", content_type="text/html")

ROUTES: tuple[Route, ...] = (
    route_with_query("/", IndexQuery, index, summary="The console", tag="console",
                     replies={200: PAGE}),
    route_with_query("/debates/{id}", TranscriptQuery, transcript,
                     summary="A debate's page", tag="console",
                     replies={200: PAGE, 404: MISSING, 403: FORBIDDEN}),
    route_with_query("/debates/{id}/live", TranscriptQuery, live,
                     summary="A debate page's body, as it stands", tag="console",
                     replies={200: Reply(description="the body (an HTML fragment)",
                                         content_type="text/html"),
                              404: MISSING, 403: FORBIDDEN}),
    route("GET", "/reviews", review_queue, summary="The review queue", tag="console",
          replies={200: PAGE}),
    route_with_query("/static/{name}", StaticQuery, static_file,
                     summary="The console's stylesheet and script", tag="console",
                     replies={200: Reply(description="the file", content_type="text/css"),
                              404: Reply(description="no such file",
                                         content_type="text/plain")}),
)
