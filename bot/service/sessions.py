"""Whether a signed identity (grants.py) still holds, asked at each use, and signing out.

A reviewer's link, token or session opens the review part only while the person is a reviewer
(`DIALECTIC_REVIEWERS`, user groups through the reviewer rule's directory): taking someone off
the list ends what they can open at their next request. A session also names the sign-out
generation it began in (storage/sessions.py): signing out moves the person's generation on, so
a copied cookie stops working everywhere, on every replica. Links are issued only for reviewers.

In multi-workspace mode (a `WorkspaceDirectory` is given) every reviewer's identity belongs to
one workspace and holds only while that workspace is installed and the person is one of *its*
reviewers (its own list from its settings, else the operator's) or, signed in with Slack, an
admin or owner of it. A value signed without a workspace (before workspaces had their own) opens
nothing there but the operator's: it would otherwise read every workspace's records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from bot.service.grants import (
    LINK_SECONDS,
    Identity,
    Scope,
    WorkspaceDirectory,
    reviewer_grant,
)
from bot.service.reviews import NotReviewer, ReviewDesk, Reviewers
from bot.service.settings import ServiceSettings
from engine.errors import InvalidRequest
from storage import audit, sessions
from storage.db import Database
from storage.tenancy import Workspace

log = logging.getLogger("dialectic.sessions")

SIGNED_IN, SIGN_IN_REFUSED = "console_signed_in", "console_sign_in_refused"
NO_WORKSPACE = ("that sign-in names no Slack workspace (it was issued before each workspace had "
                "its own): ask your operator for a new link, or sign in with Slack")
VIA_SLACK = "slack"


def not_a_reviewer(user: str, reviewers: Reviewers) -> str:
    """Why `user` is refused a reviewer's access, in one line."""
    if not user:
        return "a sign-in names a configured reviewer: this one names nobody"
    groups = (" or a member of a listed user group" if reviewers.directory is not None
              else "" if not reviewers.groups
              else " (user groups can be checked only where Slack is configured)")
    return f"{user} is not a configured reviewer: DIALECTIC_REVIEWERS must list them{groups}"


async def generation(db: Database, user: str) -> int:
    """The sign-out generation a session begun now for `user` carries."""
    async with db.transaction(readonly=True) as session:
        return await sessions.generation(session, user)


async def sign_out(db: Database, user: str, *, now: datetime) -> int:
    """End every session `user` began so far (in any browser); their new generation."""
    async with db.transaction() as session:
        return await sessions.advance(session, user, now=now)


async def workspace_refusal(identity: Identity, *, desk: ReviewDesk,
                            workspaces: WorkspaceDirectory) -> str | None:
    """Why a workspace's identity opens nothing (None: it opens that workspace's part): the
    workspace is not installed, or the person is neither its reviewer nor (signed in with
    Slack) its admin."""
    found = identity.workspace
    if found is None:
        return NO_WORKSPACE
    installed = await workspaces.installed(team_id=found.team_id,
                                           enterprise_id=found.enterprise_id)
    if installed is None:
        return (f"the Slack workspace {found.team_id} does not have Dialectic installed (any "
                "more): its sign-ins open nothing")
    if identity.user and await (await desk.reviewers_of_team(found.team_id)
                                ).is_reviewer(identity.user):
        return None
    if identity.user and identity.via == VIA_SLACK and \
            await workspaces.is_admin(identity.user, installed):
        return None
    return (f"{identity.user or 'nobody'} is neither a reviewer nor an admin of the Slack "
            f"workspace {found.team_id}: its settings (or DIALECTIC_REVIEWERS) must list them")


async def refusal(identity: Identity, *, desk: ReviewDesk, db: Database | None,
                  workspaces: WorkspaceDirectory | None = None) -> str | None:
    """Why `identity` no longer opens anything (None: it does). `db`: check the session's
    sign-out generation too (None for a reviewer token, which is not a session).
    `workspaces`: multi-workspace mode's directory (None: one workspace's service)."""
    if workspaces is not None:
        if identity.scope is Scope.REVIEW:
            why = await workspace_refusal(identity, desk=desk, workspaces=workspaces)
            if why is not None:
                return why
    elif identity.team_id:
        return ("that sign-in belongs to one workspace of a multi-workspace service; this one "
                "serves a single workspace: sign in again")
    elif identity.scope is Scope.REVIEW and not (
            identity.user and await desk.reviewers.is_reviewer(identity.user)):
        return not_a_reviewer(identity.user, desk.reviewers)
    if db is not None and identity.generation != await generation(db, identity.user):
        return "that session was signed out: sign in again"
    return None


async def audit_sign_in(db: Database, identity: Identity, *, refused: str | None,
                        now: datetime) -> None:
    """Record a console sign-in (or its refusal, with why) in the audit chain, and log it in
    one line (never a token: the identity names a person and a workspace only)."""
    data = {"via": identity.via, "team_id": identity.team_id or None,
            "enterprise_id": identity.enterprise_id or None}
    if refused is not None:
        data["reason"] = refused
        log.info("console sign-in of %s refused: %s", identity.user or "nobody", refused)
    async with db.transaction() as session:
        await audit.append(session, debate_id=None, at=now, actor=identity.user or "operator",
                           kind=SIGN_IN_REFUSED if refused is not None else SIGNED_IN,
                           data=data)


async def issue_reviewer_grant(settings: ServiceSettings, desk: ReviewDesk | Reviewers,
                               user: str, *, seconds: float = LINK_SECONDS,
                               clock: Callable[[], float] = time.time,
                               workspaces: WorkspaceDirectory | None = None,
                               workspace: Workspace | None = None) -> str:
    """A reviewer token for `user`, who must be a reviewer now (NotReviewer otherwise). In
    multi-workspace mode (`workspaces`) it is `workspace`'s (InvalidRequest without one), which
    must be installed and list `user` among its reviewers."""
    if workspaces is not None and workspace is None:
        raise InvalidRequest("this service serves many Slack workspaces: name the workspace the "
                             "link is for (--team T0123ABC)")
    if workspaces is None and workspace is not None:
        raise InvalidRequest("this service serves one Slack workspace: leave out --team")
    grant = reviewer_grant(settings, user, seconds=seconds, clock=clock,  # signable at all?
                           workspace=workspace)
    who = user.strip()
    if workspaces is not None and workspace is not None:
        if not isinstance(desk, ReviewDesk):   # a workspace's own reviewers are in its settings
            raise TypeError("a workspace's reviewer link is checked against the review desk")
        probe = Identity(who, 0.0, "link", team_id=workspace.team_id,
                         enterprise_id=workspace.enterprise_id or "")
        why = await workspace_refusal(probe, desk=desk, workspaces=workspaces)
        if why is not None:
            raise NotReviewer(why)
        installed = await workspaces.installed(team_id=workspace.team_id,
                                               enterprise_id=workspace.enterprise_id)
        # as the store knows it: an organisation's workspace carries its enterprise id
        return reviewer_grant(settings, user, seconds=seconds, clock=clock,
                              workspace=installed or workspace)
    reviewers = desk.reviewers if isinstance(desk, ReviewDesk) else desk
    if not await reviewers.is_reviewer(who):
        raise NotReviewer(not_a_reviewer(who, reviewers))
    return grant


__all__ = ["NO_WORKSPACE", "SIGNED_IN", "SIGN_IN_REFUSED", "audit_sign_in", "generation",
           "issue_reviewer_grant", "not_a_reviewer", "refusal", "sign_out", "workspace_refusal"]
