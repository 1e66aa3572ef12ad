"""What a Slack workspace's surfaces may read: its own debates, reviews and spend, never another
workspace's nor the operator's (storage/tenancy.py holds the rule; `Workspace` is the installed
workspace a request was delivered to, as the Slack gate established it)."""

from __future__ import annotations

from bot.service.debates import DebateService, budget_day
from storage import budget, debates, reviews
from storage import slack as slack_store
from storage.records import DebateRecord, Review
from storage.tenancy import Workspace, may_review, may_see

__all__ = ["Workspace", "budget_today", "debate", "in_channel", "in_thread", "may_review",
           "may_see", "pending_reviews", "recent"]

#: The key the workspace's own budget figures carry (bot/slack/views/budget.py shows them so).
SCOPE_WORKSPACE = "workspace"


async def recent(service: DebateService, workspace: Workspace, *, limit: int,
                 status: str | None = None) -> list[DebateRecord]:
    """The workspace's latest debates (in `status`, when given), newest first."""
    async with service.db.transaction(readonly=True) as session:
        return await debates.list_recent(session, limit=limit, workspace=workspace,
                                         status=status)


async def debate(service: DebateService, debate_id: str, workspace: Workspace
                 ) -> DebateRecord | None:
    """The debate if the workspace may see it; None otherwise (unknown, another's, the
    operator's: the same answer, so nobody learns which ids exist)."""
    async with service.db.transaction(readonly=True) as session:
        return await debates.visible(session, debate_id, workspace)


async def in_thread(service: DebateService, workspace: Workspace, *, channel_id: str,
                    thread_ts: str) -> list[str]:
    """Ids of the workspace's debates posted in the thread, newest first."""
    async with service.db.transaction(readonly=True) as session:
        return await slack_store.debates_in_thread(session, channel_id=channel_id,
                                                   thread_ts=thread_ts, workspace=workspace)


async def in_channel(service: DebateService, workspace: Workspace, *, channel_id: str,
                     limit: int) -> list[DebateRecord]:
    """The workspace's latest debates in the channel, newest first."""
    async with service.db.transaction(readonly=True) as session:
        return await slack_store.recent_in_channel(session, channel_id=channel_id, limit=limit,
                                                   workspace=workspace)


async def pending_reviews(service: DebateService, workspace: Workspace, *, limit: int
                          ) -> list[Review]:
    """The pending reviews of the workspace's own debates, oldest first."""
    async with service.db.transaction(readonly=True) as session:
        return await reviews.list_pending(session, limit=limit, workspace=workspace)


async def budget_today(service: DebateService, workspace: Workspace) -> dict[str, float | str]:
    """Today's spend and reservations of the workspace's own debates, and its own cap and what
    is left of it if its admins set one. Not the operator's cap nor what remains of it: those
    are figures over every workspace, which one workspace's people must not read off."""
    day = budget_day(service.clock())
    async with service.db.transaction(readonly=True) as session:
        spend = await budget.workspace_spend(session, day, workspace)
        own = await budget.share(session, day, workspace.team_id)
    found: dict[str, float | str] = {"day": day.isoformat(), "scope": SCOPE_WORKSPACE,
                                     "spent_usd": spend.spent_usd,
                                     "reserved_usd": spend.reserved_usd}
    if own is not None:   # its own cap (its admins set it) is its own to read
        found.update(own_cap_usd=own.cap_usd, own_remaining_usd=own.remaining_usd)
    return found
