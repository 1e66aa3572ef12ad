"""Transcript links unfurl as Work Objects: on `link_shared`, `chat.unfurl` with the debate's
entity for each of this service's transcript links; on `entity_details_requested` (a person
opened the card), `entity.presentDetails` with the flexpane.

Only debates of the workspace the link was shared in unfurl (storage/tenancy.py); any other
link, an unknown id, another workspace's or the operator's debate gets no unfurl (and, in the
flexpane, a "not found" error). Workspaces that are not installed never get here (gate.py).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext

from bot.service import workspaces
from bot.service.links import debate_id_of
from bot.service.workspaces import Workspace
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.context import SlackContext
from bot.slack.gate import workspace_of
from bot.slack.views.entities import debate_entity, not_found_error
from storage import outbox
from storage.records import DebateRecord

log = logging.getLogger("dialectic.slack.unfurls")
#: How many links of one message are unfurled (Slack sends each message's links at once).
MAX_LINKS = 5


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_link_shared(event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ctx.track(unfurl(ctx, event, workspace=workspace_of(context)))

    async def on_details(event: dict[str, Any], context: AsyncBoltContext) -> None:
        await ctx.track(present_details(ctx, event, workspace=workspace_of(context)))

    app.event("link_shared")(on_link_shared)
    app.event("entity_details_requested")(on_details)


async def visible(ctx: SlackContext, debate_id: str | None, workspace: Workspace
                  ) -> DebateRecord | None:
    if not debate_id:
        return None
    return await workspaces.debate(ctx.service, debate_id, workspace)


def entity(ctx: SlackContext, record: DebateRecord, *, shared_url: str | None,
           details: bool = False) -> dict[str, Any]:
    result = record.result
    return debate_entity(
        record, url=ctx.rt.settings.public_url.rstrip("/") + f"/debates/{record.id}",
        shared_url=shared_url, details=details,
        thresholds=ctx.notifier.thresholds(result) if result is not None else None,
        rehearsal=result.rehearsal if result is not None else ctx.rehearsal)


async def unfurl(ctx: SlackContext, event: dict[str, Any], *, workspace: Workspace) -> None:
    """One chat.unfurl with an entity per transcript link of this workspace's debates."""
    entities = []
    for shared in (event.get("links") or [])[:MAX_LINKS]:
        url = str((shared or {}).get("url") or "")
        record = await visible(ctx, debate_id_of(ctx.rt.settings, url), workspace)
        if record is not None:
            entities.append(entity(ctx, record, shared_url=url))
    if not entities:
        return
    where: dict[str, Any] = {"channel": event.get("channel"), "ts": event.get("message_ts")}
    if event.get("source") == "composer" and event.get("unfurl_id"):   # not posted yet
        where = {"unfurl_id": event["unfurl_id"], "source": event["source"]}
    try:
        await ctx.client.chat_unfurl(**where, metadata={"entities": entities})
    except SLACK_ERRORS as exc:
        log.warning("could not unfurl a transcript link: %s", slack_error(exc))
        return
    if "channel" in where:   # a posted message: refreshed when the debate finishes
        await remember(ctx, entities, channel=str(where["channel"]), ts=str(where["ts"]))


async def remember(ctx: SlackContext, entities: list[dict[str, Any]], *, channel: str,
                   ts: str) -> None:
    """Where each unfurled debate's card is, for the refresh its finish owes (the outbox)."""
    async with ctx.rt.db.transaction() as session:
        for unfurled in entities:
            debate_id = str((unfurled.get("external_ref") or {}).get("id") or "")
            if debate_id:
                await outbox.remember_unfurl(session, debate_id=debate_id, channel_id=channel,
                                             message_ts=ts, now=ctx.rt.service.clock(),
                                             url=str(unfurled.get("app_unfurl_url") or ""))


async def present_details(ctx: SlackContext, event: dict[str, Any], *, workspace: Workspace
                          ) -> None:
    """The flexpane: the debate with its judges and divergence, or "not found"."""
    trigger = str(event.get("trigger_id") or "")
    ref = event.get("external_ref") or {}
    if not trigger:
        return
    record = await visible(ctx, str(ref.get("id") or ""), workspace)
    try:
        if record is None:
            await ctx.client.entity_presentDetails(trigger_id=trigger, error=not_found_error())
        else:
            await ctx.client.entity_presentDetails(
                trigger_id=trigger, metadata=entity(ctx, record, shared_url=None, details=True))
    except SLACK_ERRORS as exc:
        log.warning("could not present a debate's details: %s", slack_error(exc))
