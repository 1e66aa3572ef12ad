"""The judge audit and routing measured against the reviewers over HTTP: `GET /api/judges`,
`GET /api/routing`, and the console's Judges page (bias per judge and model, the cut-offs each
preset routes by and where they come from, how routing fared against reviewers, what the data
would suggest). Reading only: applying cut-offs is the operator's `dialectic thresholds apply`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http import session
from bot.http.auth import console_allowed
from bot.http.pages import html, render
from bot.http.routes import Reply, Route, json_reply, route_with_query
from bot.http.state import RUNTIME
from bot.service.figures import (
    FIGURE_NAMES,
    TITLES,
    cutoffs_text,
    family_lines,
    feedback_text,
    figure_parts,
    in_force_text,
    share,
)
from bot.service.grants import Identity
from bot.service.oversight import (
    JudgeReport,
    RoutingReport,
    Suggestion,
    ThresholdsInForce,
)
from engine.core.presets import all_presets
from engine.errors import InvalidRequest
from engine.oversight.family_audit import FamilyAudit
from engine.oversight.feedback import PresetFeedback
from engine.oversight.inference import Figure
from engine.oversight.judge_audit import AuditPolicy, JudgeAudit
from engine.oversight.routing_audit import PresetRouting
from engine.vocabulary import MAX_WINDOW_DAYS


class WindowQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    days: int | None = Field(default=None, ge=1, le=MAX_WINDOW_DAYS,
                             description="how many days back (default: the audit window)")


class JudgesQuery(WindowQuery):
    preset: str | None = Field(default=None, max_length=64,
                               description="one preset's debates (default: every preset)")


class JudgeOut(BaseModel):
    judge: str
    model: str
    debates: int = Field(description="judged debates this judge scored in the window")
    flags: list[str] = Field(description="figures flagged: Holm-adjusted p below the policy's "
                                         "significance and an effect at least its minimum")
    position_bias: Figure
    verbosity_bias: Figure
    leniency: Figure
    drift: Figure
    reviewer_agreement: Figure

    @classmethod
    def of(cls, audit: JudgeAudit) -> JudgeOut:
        return cls(judge=audit.judge, model=audit.model, debates=audit.debates,
                   flags=list(audit.flags), position_bias=audit.position_bias,
                   verbosity_bias=audit.verbosity_bias, leniency=audit.leniency,
                   drift=audit.drift, reviewer_agreement=audit.reviewer_agreement)


class JudgesOut(BaseModel):
    days: int
    since: datetime
    presets: list[str] = Field(description="the presets read; empty: every preset")
    debates: int = Field(description="judged debates in the window (rehearsals left out)")
    labelled: int = Field(description="of them, with a reviewer's decision about the verdict")
    policy: AuditPolicy = Field(description="the minimums and significance applied")
    judges: list[JudgeOut]
    feedback: list[PresetFeedback] = Field(
        description="per preset, readers' 👍 / 👎 (user feedback, never reviewer labels) and "
                    "the share of rated results where the readers' majority agrees with the "
                    "routing; presses on rehearsals counted apart")
    families: list[FamilyOut] = Field(
        default_factory=list, description="per model family of the judges: self-preference "
        "and agreement with the panel, with counts (docs/providers.md, Mixed-family panels)")


class FamilyOut(BaseModel):
    family: str
    judges: list[str] = Field(description="the judges of this family: name (model)")
    debates: int
    own_side: list[int] = Field(description="[hits, n]: the family's decisive verdicts naming "
                                "the side its own family argued (debates where exactly one did)")
    others_on_own_side: list[int] = Field(
        description="[hits, n]: verdicts of judges whose family argued neither side, on the same "
        "debates, naming that side")
    self_preference: float | None = Field(
        description="own-side share minus the others' share (None: unmeasured)")
    small: bool = Field(description="fewer verdicts than the policy's minimum: not a finding")
    panel_agreement: list[int] = Field(description="[hits, n]: verdicts naming the panel's "
                                       "winner")
    excluded: int = Field(description="verdicts self-vote exclusion kept out of the vote")
    lines: list[str] = Field(description="the same, as the terminal and console say it")

    @classmethod
    def of(cls, audit: FamilyAudit) -> FamilyOut:
        return cls(family=audit.family, judges=list(audit.judges), debates=audit.debates,
                   own_side=[audit.own_side.hits, audit.own_side.n],
                   others_on_own_side=[audit.others_on_own_side.hits,
                                       audit.others_on_own_side.n],
                   self_preference=audit.self_preference, small=audit.small,
                   panel_agreement=[audit.panel_agreement.hits, audit.panel_agreement.n],
                   excluded=audit.excluded, lines=family_lines(audit))


class RoutingOut(BaseModel):
    in_force: dict[str, ThresholdsInForce] = Field(
        description="per preset, the cut-offs routing uses now and where they come from")
    routing: RoutingReport


async def judges_api(request: web.Request, query: JudgesQuery) -> web.Response:
    """Position bias, verbosity bias, leniency, drift and agreement with the reviewers per
    judge and model over the window, each with its sample size and interval, or "not enough
    data" below the stated minimum."""
    report = await request.app[RUNTIME].service.oversight.judge_report(days=query.days,
                                                                       preset=query.preset)
    return json_reply(_judges_out(report))


def _judges_out(report: JudgeReport) -> JudgesOut:
    return JudgesOut(days=report.days, since=report.since, presets=list(report.presets),
                     debates=report.debates, labelled=report.labelled, policy=report.policy,
                     judges=[JudgeOut.of(a) for a in report.judges],
                     feedback=list(report.feedback),
                     families=[FamilyOut.of(f) for f in report.families])


async def routing_api(request: web.Request, query: WindowQuery) -> web.Response:
    """Per preset: the alpha cut-offs in force (the preset's own, or ones an operator applied)
    and routing measured against the reviewers (spot-checked published results overturned,
    routed results approved unchanged)."""
    oversight = request.app[RUNTIME].service.oversight
    out = RoutingOut(in_force=await oversight.in_force(),
                     routing=await oversight.routing_report(days=query.days))
    return json_reply(out)


# --------------------------------------------------------------------------- the page


@dataclass(frozen=True, slots=True)
class Cell:
    """One figure as a table cell: its headline, its evidence, whether it is flagged."""

    title: str
    headline: str
    evidence: str
    flagged: bool
    enough: bool


def cell(figure: Figure) -> Cell:
    headline, evidence = figure_parts(figure)
    return Cell(TITLES.get(figure.name, figure.name), headline, evidence, figure.flagged,
                figure.status == "ok")


@dataclass(frozen=True, slots=True)
class PresetView:
    name: str
    in_force: str
    applied: bool
    results: dict[str, int]
    pending: int
    overturned: Cell
    approved: Cell
    suggestion: str
    feedback: str


def _suggestion_text(found: Suggestion | None) -> str:
    if found is None:
        return ""
    s = found.suggestion
    targets = (f"targets: {share(found.policy.target)} of auto-approved and "
               f"{share(found.policy.tentative_target)} of published results upheld")
    if s.suggested is None:
        return f"No suggestion ({targets}): {s.reason}."
    return (f"For the {targets}, the data suggest {cutoffs_text(s.suggested.thresholds)} "
            f"({s.reason}); not applied.")


def preset_view(routing: PresetRouting, in_force: ThresholdsInForce,
                suggestion: Suggestion | None, *, feedback: str = "") -> PresetView:
    return PresetView(name=routing.preset, in_force=in_force_text(in_force),
                      applied=in_force.source == "applied", results=routing.results,
                      pending=routing.pending, overturned=cell(routing.overturned["published"]),
                      approved=cell(routing.approved_unchanged["routed"]),
                      suggestion=_suggestion_text(suggestion), feedback=feedback)


def judges_page(report: JudgeReport, routing: RoutingReport,
                presets: list[PresetView], *, preset_names: list[str],
                viewer: Identity | None = None) -> str:
    rows = [(audit, [cell(getattr(audit, name)) for name in FIGURE_NAMES])
            for audit in report.judges]
    feedback = [(f.preset, feedback_text(f)) for f in report.feedback]
    families = [family_lines(f) for f in report.families]
    return render("judges.html", report=report, rows=rows, routing=routing, presets=presets,
                  feedback=feedback, families=families,
                  titles=[TITLES[n] for n in FIGURE_NAMES], preset_names=preset_names,
                  spot_share=share(routing.spot_check_fraction),
                  viewer=viewer, nav="judges")


async def _preset_views(request: web.Request, routing: RoutingReport) -> list[PresetView]:
    oversight = request.app[RUNTIME].service.oversight
    views = []
    for item in routing.presets:
        found = await oversight.suggest(item.routing.preset, days=routing.days)
        views.append(preset_view(item.routing, item.in_force, found,
                                 feedback=feedback_text(item.feedback)))
    return views


async def judges_console(request: web.Request, query: JudgesQuery) -> web.Response:
    """The judge audit and routing against the reviewers, for people."""
    if not console_allowed(request):
        return html(render("locked.html"))
    rt = request.app[RUNTIME]
    try:
        report = await rt.service.oversight.judge_report(days=query.days, preset=query.preset)
    except InvalidRequest as exc:
        return html(render("message.html", heading="Nothing to show", text=f"{exc}.",
                           back="/judges", viewer=session.current(request)), status=400)
    routing = await rt.service.oversight.routing_report(days=query.days)
    page = judges_page(report, routing, await _preset_views(request, routing),
                       preset_names=sorted(all_presets(rt.engine)),
                       viewer=session.current(request))
    return html(page)


ROUTES: tuple[Route, ...] = (
    route_with_query("/api/judges", JudgesQuery, judges_api, summary="The judge audit",
                     replies={200: Reply(description="per judge and model", schema=JudgesOut),
                              400: err.BAD_INPUT}),
    route_with_query("/api/routing", WindowQuery, routing_api,
                     summary="Routing against the reviewers",
                     replies={200: Reply(description="per preset", schema=RoutingOut),
                              400: err.BAD_INPUT}),
    route_with_query("/judges", JudgesQuery, judges_console, summary="The Judges page",
                     tag="console",
                     replies={200: Reply(description="the page (without a session: how to "
                                                     "sign in)", content_type="text/html"),
                              400: Reply(description="an unknown preset: a page saying so",
                                         content_type="text/html")}),
)
