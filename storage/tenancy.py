"""Which workspace a record belongs to, and what a workspace may see: the one rule, in its SQL
form (for listings) and its Python form (for one record), side by side.

A debate belongs to the Slack workspace it was started in (`origin.team_id`), or to the operator
(API, CLI, eval, replay: no team). Its review and its readers' feedback belong to the debate's
owner. A workspace sees and acts on its own debates only: never another workspace's, never the
operator's. One exception, by the operator's own configuration: the operator's scheduled debates
(digests, briefs) are posted in channels of the operator's *home* workspace (the one whose bot
token the service runs with), so that workspace sees those; and the reviews of operator debates
go to the operator's review channel there (`may_review`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, or_

from storage.models import DebateRow
from storage.records import Origin

__all__ = ["Workspace", "may_review", "may_see", "owned_by", "owner_of"]


@dataclass(frozen=True, slots=True)
class Workspace:
    """The installed workspace a request was delivered to. `home`: the operator's own workspace
    (where its review channel and scheduled posts are)."""

    team_id: str
    enterprise_id: str | None = None
    home: bool = False


def owner_of(origin: Origin, *, home: str | None) -> str | None:
    """The team a debate belongs to (None: the operator's); `home` is the home workspace's id."""
    if origin.team_id:
        return origin.team_id
    if origin.surface == "schedule" and origin.channel_id:
        return home   # posted by the operator's schedule in a channel of the home workspace
    return None


def may_see(workspace: Workspace | None, origin: Origin) -> bool:
    """Whether a person of `workspace` may see (or act on) a debate started from `origin`."""
    if workspace is None or not workspace.team_id:
        return False
    home = workspace.team_id if workspace.home else None
    return owner_of(origin, home=home) == workspace.team_id


def may_review(workspace: Workspace | None, origin: Origin) -> bool:
    """Whether reviewers pressing in `workspace` may decide the debate's review: its own, and the
    operator's (their requests go to the operator's review channel, in the home workspace)."""
    if may_see(workspace, origin):
        return True
    return workspace is not None and workspace.home and owner_of(origin, home=None) is None


def owned_by(workspace: Workspace) -> ColumnElement[bool]:
    """`may_see` as a WHERE clause over debates (the same rule, for listings)."""
    team = DebateRow.origin["team_id"].as_string()
    own: ColumnElement[bool] = team == workspace.team_id
    if not workspace.home:
        return own
    scheduled = and_(or_(team.is_(None), team == ""),
                     DebateRow.origin["surface"].as_string() == "schedule",
                     DebateRow.origin["channel_id"].as_string().is_not(None),
                     DebateRow.origin["channel_id"].as_string() != "")
    either: ColumnElement[bool] = or_(own, scheduled)
    return either
