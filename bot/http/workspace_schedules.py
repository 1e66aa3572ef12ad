"""A workspace's schedules from the console and the API: `GET/POST
/api/workspaces/{team}/schedules`, `POST /api/workspaces/{team}/schedules/{schedule}` (edit,
pause, resume), `POST
.../{schedule}/remove`, and the console's page `/workspaces/{team}/schedules`. The same rules as
App Home (bot/scheduling/workspace.py) and the same rule of who (`may_edit`, as for the
settings: the operator). Slack is not asked here whether the bot sees the channel (App Home
does); a channel it cannot post in shows up in the schedule's run, skipped with the reason."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http import session
from bot.http.console import PAGE
from bot.http.pages import html, render
from bot.http.routes import Reply, Route, json_reply, route, route_with_body
from bot.http.state import RUNTIME
from bot.http.workspace_settings import acting, console_team, may_edit, no_team, team_of
from bot.scheduling import workspace as wsched
from bot.service import workspace_settings as ws
from engine.core.presets import all_presets
from engine.errors import InvalidRequest
from storage.errors import NotFound
from storage.workspace_schedules import WorkspaceSchedule

NOT_FOUND = Reply(description="no such workspace or schedule", schema=err.ErrorOut)
REFUSED = Reply(description="a value refused", schema=err.ErrorOut)
FORBIDDEN = Reply(description="not the operator", schema=err.ErrorOut)


class WorkspaceScheduleOut(BaseModel):
    id: str
    name: str
    preset: str
    topics: list[str]
    cron: str
    timezone: str
    channel: str
    enabled: bool = Field(description="false: paused")
    next_run: datetime | None = Field(description="when it runs next (none while paused)")
    updated_by: str
    updated_at: datetime | None


class WorkspaceSchedulesOut(BaseModel):
    team_id: str
    schedules: list[WorkspaceScheduleOut]
    max_schedules: int = Field(description="how many a workspace may have")


class WorkspaceScheduleIn(BaseModel):
    """A new schedule: every field is required (`timezone`: UTC when left out)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    preset: str
    topics: list[str] = Field(description="each debated; one digest lists them all")
    cron: str = Field(description="5 fields, at most hourly: `0 8 * * 1-5`")
    timezone: str = "UTC"
    channel: str = Field(description="a channel id (C…) of the workspace")


class WorkspaceScheduleChange(BaseModel):
    """Fields to change (absent: left alone); `enabled` false pauses it, true resumes it."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    preset: str | None = None
    topics: list[str] | None = None
    cron: str | None = None
    timezone: str | None = None
    channel: str | None = None
    enabled: bool | None = None


def _out(found: wsched.Listed) -> WorkspaceScheduleOut:
    s = found.schedule
    return WorkspaceScheduleOut(id=s.id, name=s.name, preset=s.preset, topics=list(s.topics),
                       cron=s.cron, timezone=s.timezone, channel=s.channel, enabled=s.enabled,
                       next_run=found.next_run, updated_by=s.updated_by,
                       updated_at=s.updated_at)


async def _listed(request: web.Request, team: str) -> list[wsched.Listed]:
    rt = request.app[RUNTIME]
    return await wsched.listed(rt.db, team, rt.service.clock())


async def _one(request: web.Request, team: str, schedule: WorkspaceSchedule
               ) -> WorkspaceScheduleOut:
    found = next(f for f in await _listed(request, team) if f.schedule.id == schedule.id)
    return _out(found)


def _form(fields: dict[str, Any]) -> dict[str, str]:
    """The API's fields as the form's text (topics: one a line)."""
    return {k: "\n".join(v) if isinstance(v, list) else str(v) for k, v in fields.items()
            if k in wsched.FIELDS}


async def _apply(request: web.Request, team: str, form: dict[str, str], *,
                 schedule_id: str | None = None, enabled: bool | None = None
                 ) -> WorkspaceSchedule:
    """Add (no id) or change the schedule as whoever acts (the operator, or the workspace's
    admin signed in with Slack), by the rules."""
    rt = request.app[RUNTIME]
    admin, now = await may_edit(request, team), rt.service.clock()
    fields = wsched.parse_form(form, presets=sorted(all_presets(rt.engine)))
    if schedule_id is None:
        return await wsched.add(rt.db, team, fields, by=acting(request), admin=admin, now=now)
    found = await wsched.edit(rt.db, team, schedule_id, fields, by=acting(request), admin=admin,
                              now=now) if fields or enabled is None else None
    if enabled is not None:
        found = await wsched.set_enabled(rt.db, team, schedule_id, enabled, by=acting(request),
                                         admin=admin, now=now)
    assert found is not None
    return found


def _refusal(exc: Exception) -> web.Response:
    if isinstance(exc, ws.NotAdmin):
        return err.error(403, str(exc))
    if isinstance(exc, NotFound):
        return err.error(404, "no such schedule in this workspace")
    return err.error(400, str(exc))


async def get_workspace_schedules(request: web.Request) -> web.Response:
    """The workspace's schedules, with when each runs next."""
    team = team_of(request)
    if team is None:
        return no_team()
    listed = await _listed(request, team)
    return json_reply(WorkspaceSchedulesOut(team_id=team, schedules=[_out(f) for f in listed],
                                   max_schedules=wsched.MAX_PER_WORKSPACE))


async def add_workspace_schedule(request: web.Request, body: WorkspaceScheduleIn) -> web.Response:
    """Add a schedule to the workspace (audited, by the operator)."""
    team = team_of(request)
    if team is None:
        return no_team()
    try:
        added = await _apply(request, team, _form(body.model_dump()))
    except (ws.NotAdmin, InvalidRequest, NotFound) as exc:
        return _refusal(exc)
    return json_reply(await _one(request, team, added), status=201)


async def change_workspace_schedule(request: web.Request, body: WorkspaceScheduleChange
                                    ) -> web.Response:
    """Edit, pause (`enabled: false`) or resume a schedule of the workspace (audited)."""
    team = team_of(request)
    if team is None:
        return no_team()
    try:
        found = await _apply(request, team, _form(body.model_dump(exclude_none=True)),
                             schedule_id=request.match_info["schedule"], enabled=body.enabled)
    except (ws.NotAdmin, InvalidRequest, NotFound) as exc:
        return _refusal(exc)
    return json_reply(await _one(request, team, found))


async def remove_workspace_schedule(request: web.Request) -> web.Response:
    """Remove a schedule of the workspace (audited with what it was); its runs stay."""
    team = team_of(request)
    if team is None:
        return no_team()
    rt = request.app[RUNTIME]
    try:
        await wsched.remove(rt.db, team, request.match_info["schedule"], by=acting(request),
                            admin=await may_edit(request, team), now=rt.service.clock())
    except (ws.NotAdmin, InvalidRequest, NotFound) as exc:
        return _refusal(exc)
    return await get_workspace_schedules(request)


async def workspace_schedules_page(request: web.Request) -> web.Response:
    team = console_team(request)
    if isinstance(team, web.Response):
        return team
    return await _page(request, team, editing=request.query.get("edit", ""))


async def workspace_schedules_form(request: web.Request) -> web.Response:
    """The page's forms: save (add, or edit with `id`), pause, resume, remove."""
    team = console_team(request)
    if isinstance(team, web.Response):
        return team
    posted = await request.post()
    form = {k: str(posted.get(k) or "") for k in wsched.FIELDS}
    action, schedule_id = str(posted.get("action") or "save"), str(posted.get("id") or "")
    rt = request.app[RUNTIME]
    try:
        if action == "remove":
            await wsched.remove(rt.db, team, schedule_id, by=acting(request),
                                admin=await may_edit(request, team), now=rt.service.clock())
        elif action in ("pause", "resume"):
            await _apply(request, team, {}, schedule_id=schedule_id,
                         enabled=action == "resume")
        else:
            await _apply(request, team, form, schedule_id=schedule_id or None)
    except (ws.NotAdmin, InvalidRequest, NotFound) as exc:
        status = 403 if isinstance(exc, ws.NotAdmin) else 404 if isinstance(
            exc, NotFound) else 400
        return await _page(request, team, error=str(exc) if status != 404 else
                           "no such schedule in this workspace", status=status,
                           field=getattr(exc, "field", ""), form=form, editing=schedule_id)
    return await _page(request, team, saved=True)


async def _page(request: web.Request, team: str, *, status: int = 200, **shown: Any
                ) -> web.Response:
    listed = await _listed(request, team)
    editing = next((f.schedule for f in listed if f.schedule.id == shown.get("editing")), None)
    form = shown.pop("form", None) or _filled(editing)
    context: dict[str, Any] = {"saved": False, "error": "", "field": "", **shown}
    context["editing"] = editing
    page = render("workspace_schedules.html", team=team, listed=listed, form=form,
                  editable=await may_edit(request, team), viewer=session.current(request),
                  presets=sorted(all_presets(request.app[RUNTIME].engine)),
                  max_schedules=wsched.MAX_PER_WORKSPACE, **context)
    return html(page, status=status)


def _filled(schedule: WorkspaceSchedule | None) -> dict[str, str]:
    if schedule is None:
        return {**dict.fromkeys(wsched.FIELDS, ""), wsched.TIMEZONE: "UTC",
                wsched.PRESET: "market"}
    return {wsched.NAME: schedule.name, wsched.PRESET: schedule.preset,
            wsched.TOPICS: "\n".join(schedule.topics), wsched.CRON: schedule.cron,
            wsched.TIMEZONE: schedule.timezone, wsched.CHANNEL: schedule.channel}


ROUTES: tuple[Route, ...] = (
    route("GET", "/api/workspaces/{team}/schedules", get_workspace_schedules,
          summary="A workspace's schedules",
          replies={200: Reply(description="by name, with their next runs",
                              schema=WorkspaceSchedulesOut),
                   404: NOT_FOUND}),
    route_with_body("/api/workspaces/{team}/schedules", WorkspaceScheduleIn, add_workspace_schedule,
                    summary="Add a schedule to a workspace",
                    replies={201: Reply(description="added", schema=WorkspaceScheduleOut),
                             400: REFUSED, 403: FORBIDDEN, 404: NOT_FOUND}),
    route_with_body("/api/workspaces/{team}/schedules/{schedule}", WorkspaceScheduleChange,
                    change_workspace_schedule,
                    summary="Edit, pause or resume a workspace's schedule",
                    replies={200: Reply(description="saved", schema=WorkspaceScheduleOut),
                             400: REFUSED, 403: FORBIDDEN, 404: NOT_FOUND}),
    route("POST", "/api/workspaces/{team}/schedules/{schedule}/remove", remove_workspace_schedule,
          summary="Remove a workspace's schedule",
          replies={200: Reply(description="removed; the schedules left",
                              schema=WorkspaceSchedulesOut),
                   403: FORBIDDEN, 404: NOT_FOUND}),
    route("GET", "/workspaces/{team}/schedules", workspace_schedules_page,
          summary="A workspace's schedules", tag="console", replies={200: PAGE, 404: NOT_FOUND}),
    route("POST", "/workspaces/{team}/schedules", workspace_schedules_form,
          summary="Change a workspace's schedules", tag="console",
          replies={200: PAGE, 400: PAGE, 403: PAGE, 404: NOT_FOUND}),
)
