"""What the request's sign-in may read: everything (the operator, a single workspace's
reviewer), or, for a sign-in scoped to one Slack workspace (multi-workspace mode: a reviewer's
link, token or Slack session), that workspace's debates, reviews and spend only. The rule is
storage/tenancy.py's, asked through bot/service/workspaces.py, the same one Slack's surfaces
ask. A debate the workspace may not see is NotFound (404), never "forbidden": nobody learns
which ids exist elsewhere."""

from __future__ import annotations

from aiohttp import web

from bot.http.auth import workspace_of
from bot.http.state import RUNTIME
from bot.service import workspaces
from storage.errors import NotFound
from storage.records import DebateRecord, Review

__all__ = ["budget", "debate", "pending_reviews", "recent"]


async def debate(request: web.Request, debate_id: str) -> DebateRecord:
    """The debate, if this request's sign-in may see it; NotFound otherwise."""
    rt = request.app[RUNTIME]
    workspace = workspace_of(request)
    if workspace is None:
        return await rt.service.get(debate_id)
    found = await workspaces.debate(rt.service, debate_id, workspace)
    if found is None:
        raise NotFound("debate", debate_id)
    return found


async def recent(request: web.Request, *, limit: int, status: str | None = None
                 ) -> list[DebateRecord]:
    """The newest debates this request's sign-in may see."""
    rt = request.app[RUNTIME]
    workspace = workspace_of(request)
    if workspace is None:
        return await rt.service.recent(status=status, limit=limit)
    return await workspaces.recent(rt.service, workspace, limit=limit, status=status)


async def pending_reviews(request: web.Request, *, limit: int = 100) -> list[Review]:
    """The pending reviews of the debates this request's sign-in may see, oldest first."""
    rt = request.app[RUNTIME]
    workspace = workspace_of(request)
    if workspace is None:
        return await rt.reviews.pending(limit=limit)
    return await workspaces.pending_reviews(rt.service, workspace, limit=limit)


async def budget(request: web.Request) -> dict[str, float | str]:
    """Today's budget as this sign-in may read it: the operator's day, or the workspace's own
    spend (and its own cap, when its admins set one), never the figures over every workspace."""
    rt = request.app[RUNTIME]
    workspace = workspace_of(request)
    if workspace is None:
        return await rt.service.budget_today()
    return await workspaces.budget_today(rt.service, workspace)
