"""Whether a signed identity (grants.py) still holds, asked at each use, and signing out.

A reviewer's link, token or session opens the review part only while the person is a reviewer
(`DIALECTIC_REVIEWERS`, user groups through the reviewer rule's directory): taking someone off
the list ends what they can open at their next request. A session also names the sign-out
generation it began in (storage/sessions.py): signing out moves the person's generation on, so
a copied cookie stops working everywhere, on every replica. Links are issued only for reviewers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from bot.service.grants import LINK_SECONDS, Identity, Scope, reviewer_grant
from bot.service.reviews import NotReviewer, Reviewers
from bot.service.settings import ServiceSettings
from storage import sessions
from storage.db import Database


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


async def refusal(identity: Identity, *, reviewers: Reviewers, db: Database | None
                  ) -> str | None:
    """Why `identity` no longer opens anything (None: it does). `db`: check the session's
    sign-out generation too (None for a reviewer token, which is not a session)."""
    if identity.scope is Scope.REVIEW and not (
            identity.user and await reviewers.is_reviewer(identity.user)):
        return not_a_reviewer(identity.user, reviewers)
    if db is not None and identity.generation != await generation(db, identity.user):
        return "that session was signed out: sign in again"
    return None


async def issue_reviewer_grant(settings: ServiceSettings, reviewers: Reviewers, user: str, *,
                               seconds: float = LINK_SECONDS,
                               clock: Callable[[], float] = time.time) -> str:
    """A reviewer token for `user`, who must be a reviewer now (NotReviewer otherwise)."""
    grant = reviewer_grant(settings, user, seconds=seconds, clock=clock)  # signable at all?
    if not await reviewers.is_reviewer(user.strip()):
        raise NotReviewer(not_a_reviewer(user.strip(), reviewers))
    return grant


__all__ = ["generation", "issue_reviewer_grant", "not_a_reviewer", "refusal", "sign_out"]
