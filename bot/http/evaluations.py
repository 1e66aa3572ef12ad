"""Evaluations over HTTP: `GET /api/evaluations` (the runs), `GET /api/evaluations/{id}` (one
run's report, as `dialectic eval --json` prints it) and the console's Evaluations pages. Reading
only: evaluations are started from the command line, where their cost is asked first."""

from __future__ import annotations

from datetime import datetime

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http import session
from bot.http.auth import console_allowed
from bot.http.pages import html, render
from bot.http.routes import Reply, Route, json_reply, route, route_with_query
from bot.http.state import RUNTIME
from bot.service.evaluations import REHEARSAL_NOTE, Evaluations, Finished
from engine.evaluation.dataset import shown_source
from engine.evaluation.report import reading
from engine.vocabulary import MAX_LISTED
from storage.errors import NotFound
from storage.evaluations import FINISHED, EvaluationRun

NOTE = REHEARSAL_NOTE.removeprefix("REHEARSAL: ")   # under the page's own "Rehearsal" label


class EvaluationsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    limit: int = Field(default=20, ge=1, le=MAX_LISTED, description="how many, newest first")


class EvaluationSummaryOut(BaseModel):
    id: str
    dataset: str
    source: str
    status: str = Field(description="running, finished, or stopped (the budget ran out or "
                                    "the run was interrupted: rerun it to resume)")
    rehearsal: bool = Field(description="answered by the offline rehearsal model: the "
                                        "accuracy is meaningless")
    modes: list[str]
    items: int
    done: dict[str, int] = Field(description="items with an outcome, per mode")
    cost_usd: float
    estimate_usd: tuple[float, float] = Field(description="low and high, said before it ran")
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, run: EvaluationRun) -> EvaluationSummaryOut:
        return cls(id=run.id, dataset=run.dataset, source=shown_source(run.source),
                   status=run.status,
                   rehearsal=run.rehearsal, modes=list(run.spec.get("modes", [])),
                   items=len(run.spec.get("items", [])), done=run.done, cost_usd=run.cost_usd,
                   estimate_usd=(run.estimate_low_usd, run.estimate_high_usd),
                   created_at=run.created_at, finished_at=run.finished_at)


class EvaluationListOut(BaseModel):
    evaluations: list[EvaluationSummaryOut]


class ModeOut(BaseModel):
    mode: str
    n: int
    accuracy: float
    interval: tuple[float, float] = Field(description="Wilson 95% interval of the accuracy")
    cost_usd: float = Field(description="mean per question")
    calls: float = Field(description="mean per question")
    tokens: float = Field(description="mean per question")
    seconds: float = Field(description="mean per question")


class ComparisonOut(BaseModel):
    mode: str
    against: str
    difference: float = Field(description="accuracy of `mode` minus `against`, paired items")
    interval: tuple[float, float] = Field(description="95% interval of the difference")
    p_value: float = Field(description="McNemar's exact test")
    b: int = Field(description="items only `mode` answered right")
    c: int = Field(description="items only `against` answered right")
    cost_ratio: float | None


class EvaluationOut(BaseModel):
    """The report as `dialectic eval --json` prints it (extra keys may follow)."""

    model_config = ConfigDict(extra="allow")
    id: str
    status: str
    rehearsal: bool
    dataset: str
    modes: list[ModeOut]
    comparisons: list[ComparisonOut]
    normalisation: str
    complete: bool = Field(description="false: items are missing (listed); never shown as "
                                       "complete")
    missing: list[str] = Field(description="the ids of the items without an outcome")
    stopped: str | None = Field(default=None, description="why the run stopped before every "
                                "item had an outcome (the budget, a failed debate), else null")
    cost_usd_total: float = Field(description="what the budget's ledger booked for the run: "
                                  "every item, failed debates included")


async def list_evaluations(request: web.Request, query: EvaluationsQuery) -> web.Response:
    """The newest evaluation runs first, with how far each got."""
    runs = await Evaluations(request.app[RUNTIME].service).recent(limit=query.limit)
    return json_reply(EvaluationListOut(evaluations=[EvaluationSummaryOut.of(r) for r in runs]))


async def get_evaluation(request: web.Request) -> web.Response:
    """One run's report: per mode accuracy, interval and cost per question; comparisons."""
    found = await Evaluations(request.app[RUNTIME].service).show(request.match_info["id"])
    report = found.as_json()
    report["source"] = shown_source(found.report.source)   # a name, never a server path
    return json_reply(report, as_type=dict)


def evaluations_page(runs: list[EvaluationRun], **context: object) -> str:
    return render("evaluations.html", runs=runs, finished=FINISHED, nav="evaluations",
                  rehearsal_note=NOTE, **context)


def evaluation_page(found: Finished, **context: object) -> str:
    return render("evaluation.html", run=found.run, report=found.report,
                  source=shown_source(found.report.source),
                  readings=reading(found.report), rehearsal_note=NOTE,
                  nav="evaluations", **context)


async def evaluations_console(request: web.Request, query: EvaluationsQuery) -> web.Response:
    """The evaluation runs, newest first."""
    if not console_allowed(request):
        return html(render("locked.html"))
    runs = await Evaluations(request.app[RUNTIME].service).recent(limit=query.limit)
    return html(evaluations_page(runs, viewer=session.current(request)))


async def evaluation_console(request: web.Request) -> web.Response:
    """One evaluation's report, for people."""
    if not console_allowed(request):
        return html(render("locked.html"))
    run_id = request.match_info["id"]
    try:
        found = await Evaluations(request.app[RUNTIME].service).show(run_id)
    except NotFound:
        return html(render("message.html", heading="No such evaluation",
                           text=f"There is no evaluation {run_id!r} here.", back="/evaluations",
                           viewer=session.current(request)), status=404)
    return html(evaluation_page(found, viewer=session.current(request)))


NO_EVALUATION = Reply(description="no such evaluation", schema=err.ErrorOut)
PAGE = Reply(description="the page (without a session: how to sign in)",
             content_type="text/html")

ROUTES: tuple[Route, ...] = (
    route_with_query("/api/evaluations", EvaluationsQuery, list_evaluations,
                     summary="Evaluation runs",
                     replies={200: Reply(description="newest first",
                                         schema=EvaluationListOut), 400: err.BAD_INPUT}),
    route("GET", "/api/evaluations/{id}", get_evaluation, summary="An evaluation's report",
          replies={200: Reply(description="the report", schema=EvaluationOut),
                   404: NO_EVALUATION}),
    route_with_query("/evaluations", EvaluationsQuery, evaluations_console,
                     summary="The Evaluations page", tag="console",
                     replies={200: PAGE, 400: err.BAD_INPUT}),
    route("GET", "/evaluations/{id}", evaluation_console, summary="An evaluation's page",
          tag="console", replies={200: PAGE, 404: Reply(description="a page saying so",
                                                        content_type="text/html")}),
)
