"""A workspace's settings from the console and the API: `GET/POST /api/workspaces/{team}/settings`
and the console's page `/workspaces/{team}/settings` (a form). The same rule as App Home
(bot/service/workspace_settings.py): the operator (the API token, its console session) reads and
changes any workspace's; a reviewer's sign-in opens neither (auth.py). In multi-workspace mode a
sign-in is one workspace's: its admins and owners signed in with Slack (Slack's `users.info`,
asked with that workspace's token) get the same page and API for that workspace only, their
changes audited as theirs; its other reviewers and every other workspace are refused (`may_edit`
is the one place).
Slack is not asked here whether the reviewers and channel exist (App Home does): the console
checks their form only."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http import session
from bot.http.auth import console_allowed, workspace_of
from bot.http.console import PAGE, locked_page, message_page
from bot.http.pages import html, render
from bot.http.routes import Reply, Route, json_reply, route, route_with_body
from bot.http.state import RUNTIME
from bot.service import workspace_settings as ws
from bot.service.grants import Scope
from bot.service.sessions import VIA_SLACK
from engine.errors import InvalidRequest

OPERATOR = "operator"
NOT_FOUND = Reply(description="no such workspace id", schema=err.ErrorOut)
_TEAM_ID = re.compile(r"[TE][A-Z0-9]{1,30}")


class SettingsOut(BaseModel):
    team_id: str
    daily_budget_usd: float = Field(description="the cap in force (its own, or the operator's)")
    operator_cap_usd: float = Field(description="the operator's cap over every workspace")
    reviewers: list[str]
    review_channel: str | None
    thresholds: dict[str, dict[str, float]] = Field(
        description="the workspace's own alpha cut-offs per preset (others: the preset's)")
    own: list[str] = Field(description="the fields the workspace set (others: the operator's)")


class SettingsIn(BaseModel):
    """Fields to change; "" puts the operator's default back; absent fields are left alone."""

    model_config = ConfigDict(extra="forbid")
    daily_budget_usd: str | None = None
    reviewers: str | None = None
    review_channel: str | None = None
    thresholds: str | None = Field(default=None, description=(
        "alpha cut-offs per preset: `decision high=0.9 escalate=0.6; market tentative=0.7`"))


async def may_edit(request: web.Request, team_id: str) -> bool:
    """The operator (no token configured: loopback only; or the API token's session or bearer),
    or an admin or owner of workspace `team_id` signed in with Slack into that workspace."""
    workspace = workspace_of(request)
    if workspace is None:
        viewer = session.current(request)
        return viewer is None or viewer.scope is Scope.FULL
    viewer = session.current(request)
    directory = request.app[RUNTIME].workspaces
    return (viewer is not None and viewer.via == VIA_SLACK and workspace.team_id == team_id
            and directory is not None and await directory.is_admin(viewer.user, workspace))


def _by(request: web.Request) -> str:
    """Whom a change is audited as: the signed-in admin, else the operator."""
    viewer = session.current(request)
    return viewer.user if viewer is not None and viewer.team_id else OPERATOR


def _defaults(request: web.Request) -> ws.Defaults:
    settings = request.app[RUNTIME].settings
    return ws.Defaults(daily_budget_usd=settings.daily_budget_usd, reviewers=settings.reviewers)


async def _found(request: web.Request, team: str) -> SettingsOut:
    found = await ws.effective(request.app[RUNTIME].db, team, _defaults(request))
    return SettingsOut(team_id=team, daily_budget_usd=found.daily_budget_usd,
                       operator_cap_usd=found.operator_cap_usd, reviewers=list(found.reviewers),
                       review_channel=found.review_channel, thresholds=found.thresholds,
                       own=sorted(found.own))


async def _save(request: web.Request, team: str, form: dict[str, str]) -> None:
    rt = request.app[RUNTIME]
    in_force = await rt.service.oversight.in_force()
    changes = ws.changes_from_form(
        form, operator_cap_usd=rt.settings.daily_budget_usd,
        presets={name: force.thresholds for name, force in in_force.items()})
    await ws.save(rt.db, team, changes, by=_by(request), admin=await may_edit(request, team),
                  now=rt.service.clock())


def _team(request: web.Request) -> str | None:
    """The path's workspace id, if it is one (T…, or E… for an organisation)."""
    team = request.match_info["team"]
    return team if _TEAM_ID.fullmatch(team) else None


def _no_team() -> web.Response:
    return err.error(404, "no such workspace: give its Slack team id (T…)")


ADMINS_ONLY = "only the workspace's admins and owners, signed in with Slack, open its settings"


async def _refusal(request: web.Request, team: str, *, page: bool = False
                   ) -> web.Response | None:
    """A workspace's sign-in that may not edit `team`'s settings may not read them either: a
    403 (the console's page says it as a page)."""
    if workspace_of(request) is None or await may_edit(request, team):
        return None
    if page:
        return html(message_page("Not your settings to open", ADMINS_ONLY,
                                 viewer=session.current(request)), status=403)
    return err.error(403, ADMINS_ONLY)


async def get_settings(request: web.Request) -> web.Response:
    """The workspace's settings in force, and which are its own."""
    team = _team(request)
    if team is None:
        return _no_team()
    return await _refusal(request, team) or json_reply(await _found(request, team))


async def put_settings(request: web.Request, body: SettingsIn) -> web.Response:
    """Change the workspace's settings (audited, by the operator)."""
    team = _team(request)
    if team is None:
        return _no_team()
    try:
        await _save(request, team, body.model_dump(exclude_none=True))
    except ws.NotAdmin as exc:
        return err.error(403, str(exc))
    except InvalidRequest as exc:
        return err.error(400, str(exc))
    return json_reply(await _found(request, team))


async def settings_page(request: web.Request) -> web.Response:
    if not console_allowed(request):
        return html(locked_page())
    team = _team(request)
    if team is None:
        return _no_team()
    return await _refusal(request, team, page=True) or await _page(request, team)


async def settings_form(request: web.Request) -> web.Response:
    if not console_allowed(request):
        return html(locked_page())
    team = _team(request)
    if team is None:
        return _no_team()
    refused = await _refusal(request, team, page=True)
    if refused is not None:   # audited as any refused change is
        await ws.refused(request.app[RUNTIME].db, team, by=_by(request),
                         now=request.app[RUNTIME].service.clock())
        return refused
    posted = await request.post()
    form = {k: str(posted.get(k) or "")
            for k in (ws.BUDGET, ws.REVIEWERS, ws.CHANNEL, ws.THRESHOLDS)}
    try:
        await _save(request, team, form)
    except ws.NotAdmin as exc:
        return await _page(request, team, error=str(exc), status=403)
    except ws.FieldError as exc:
        return await _page(request, team, error=str(exc), status=400, field=exc.field,
                           form=form)
    except InvalidRequest as exc:
        return await _page(request, team, error=str(exc), status=400, form=form)
    return await _page(request, team, saved=True)


async def _page(request: web.Request, team: str, *, status: int = 200, **shown: Any
                ) -> web.Response:
    found = await _found(request, team)
    own = await ws.overrides(request.app[RUNTIME].db, team)
    form = shown.pop("form", None) or {
        ws.BUDGET: "" if own.daily_budget_usd is None else f"{own.daily_budget_usd:g}",
        ws.REVIEWERS: " ".join(own.reviewers or ()), ws.CHANNEL: own.review_channel or "",
        ws.THRESHOLDS: found_text(found)}
    context: dict[str, Any] = {"saved": False, "error": "", "field": "", **shown}
    page = render("workspace_settings.html", found=found, form=form,
                  editable=await may_edit(request, team), viewer=session.current(request),
                  **context)
    return html(page, status=status)


def found_text(found: SettingsOut) -> str:
    return "; ".join(f"{name} " + " ".join(f"{k}={v:g}" for k, v in cutoffs.items())
                     for name, cutoffs in sorted(found.thresholds.items()))


ROUTES: tuple[Route, ...] = (
    route("GET", "/api/workspaces/{team}/settings", get_settings,
          summary="A workspace's settings",
          replies={200: Reply(description="in force, and which are its own",
                              schema=SettingsOut),
                   404: Reply(description="no such workspace id", schema=err.ErrorOut)}),
    route_with_body("/api/workspaces/{team}/settings", SettingsIn, put_settings,
                    summary="Change a workspace's settings",
                    replies={200: Reply(description="saved; in force now", schema=SettingsOut),
                             400: Reply(description="a value refused", schema=err.ErrorOut),
                             403: Reply(description="not the operator", schema=err.ErrorOut),
                             404: Reply(description="no such workspace id",
                                        schema=err.ErrorOut)}),
    route("GET", "/workspaces/{team}/settings", settings_page,
          summary="A workspace's settings", tag="console", replies={200: PAGE, 404: NOT_FOUND}),
    route("POST", "/workspaces/{team}/settings", settings_form,
          summary="Change a workspace's settings", tag="console",
          replies={200: PAGE, 400: PAGE, 403: PAGE, 404: NOT_FOUND}),
)
