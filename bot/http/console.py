"""The web console: the recent debates with a form to start one, and the transcript page Slack
links to. Handlers gather the values; the pages are pure functions of them over the Jinja2
templates (pages.py), so they render the same in a test as in a browser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http.auth import console_allowed, console_login
from bot.http.pages import StaticQuery, html, render, static_file
from bot.http.routes import Reply, Route, route_with_query
from bot.http.state import RUNTIME
from engine.presets import all_presets
from engine.vocabulary import Mode, choices
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus

REFRESH_SECONDS = 3     # a running debate's page reloads itself this often


def index_page(*, records: Sequence[DebateRecord], budget: Mapping[str, float | str],
               presets: Sequence[str], rehearsal: bool) -> str:
    return render("index.html", records=records, budget=budget, presets=sorted(presets),
                  modes=choices(Mode), rehearsal=rehearsal, refresh=None)


def locked_page() -> str:
    return render("locked.html", refresh=None)


def transcript_page(record: DebateRecord, *, rehearsal: bool) -> str:
    """`rehearsal`: this process runs without a model; the banner shows unless the debate's
    own result says it was argued by one."""
    running = record.status not in TERMINAL_STATUSES and \
        record.status is not DebateStatus.AWAITING_REVIEW
    banner = rehearsal and (record.result is None or record.result.rehearsal)
    return render("transcript.html", record=record, rehearsal=banner, running=running,
                  refresh=REFRESH_SECONDS if running else None)


class IndexQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    token: str | None = Field(default=None, description="the API token: sets the console's "
                                                        "cookie and redirects to /")


class TranscriptQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sig: str = Field(default="", description="the signature a transcript link carries")


async def index(request: web.Request, query: IndexQuery) -> web.Response:
    """Today's budget, a form to start a debate, the 50 newest debates."""
    login = console_login(request, query.token)
    if login is not None:
        raise login
    if not console_allowed(request):
        return html(locked_page())
    rt = request.app[RUNTIME]
    page = index_page(records=await rt.service.recent(limit=50),
                      budget=await rt.service.budget_today(),
                      presets=list(all_presets(rt.engine)), rehearsal=rt.is_rehearsal)
    return html(page)


async def transcript(request: web.Request, query: TranscriptQuery) -> web.Response:
    """One debate's transcript; it reloads itself while the debate runs."""
    debate_id = request.match_info["id"]
    if not console_allowed(request, debate_id=debate_id, signature=query.sig):
        raise web.HTTPForbidden(text="this transcript needs the console token or a signed link")
    rt = request.app[RUNTIME]
    record = await rt.service.get(debate_id)
    return html(transcript_page(record, rehearsal=rt.is_rehearsal))


PAGE = Reply(description="the page", content_type="text/html")

ROUTES: tuple[Route, ...] = (
    route_with_query("/", IndexQuery, index, summary="The console", tag="console",
                     replies={200: PAGE,
                              302: Reply(description="the token was right: cookie set, to /",
                                         content_type="text/plain")}),
    route_with_query("/debates/{id}", TranscriptQuery, transcript,
                     summary="A debate's transcript page", tag="console",
                     replies={200: PAGE, 404: err.NOT_FOUND,
                              403: Reply(description="neither the console's cookie nor a "
                                                     "signed link", content_type="text/plain")}),
    route_with_query("/static/{name}", StaticQuery, static_file,
                     summary="The console's stylesheet", tag="console",
                     replies={200: Reply(description="the file", content_type="text/css"),
                              404: Reply(description="no such file",
                                         content_type="text/plain")}),
)
