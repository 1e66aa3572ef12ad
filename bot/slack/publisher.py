"""Scheduled runs into Slack: the scheduling layer's `Publisher`, rendered with the digest and
brief views and posted through the notifier's paced, retried client."""

from __future__ import annotations

import logging

from bot.scheduling.publishing import BriefNote, Posted
from bot.scheduling.reports import DigestReport
from bot.slack.clients import using
from bot.slack.notifier import SLACK_ERRORS, SlackNotifier, slack_error
from bot.slack.views.brief import brief_message, brief_missed
from bot.slack.views.common import Message
from bot.slack.views.digest import digest_details, digest_message

log = logging.getLogger("dialectic.slack")


class SlackPublisher:
    def __init__(self, notifier: SlackNotifier) -> None:
        self.notifier = notifier

    async def unreachable(self, team: str | None) -> str | None:
        """Multi-workspace mode: a schedule naming no workspace, or one not installed now (it
        runs again once reinstalled). One workspace's token: always reachable."""
        if self.notifier.clients.store is None:
            return None
        if not team:
            return ("it names no workspace, and this app is installed in several: set `team` "
                    "to the workspace it runs for")
        if await self.notifier.clients.for_workspace(team_id=team) is None:
            return f"the workspace {team} has not installed the app (uninstalled or revoked)"
        return None

    async def digest(self, channel: str, report: DigestReport, *, team: str | None = None
                     ) -> Posted:
        message = digest_message(report)
        client = None
        if team and self.notifier.clients.store is not None:   # the workspace's own token
            client = await self.notifier.clients.for_workspace(team_id=team)
        with using(client):
            ts = await self._post(channel, message, what=f"digest {report.schedule_id}")
            if ts is None:
                return Posted(ts=None, error=f"the digest could not be posted to {channel}",
                              message=_record(message))
            for reply in digest_details(report, self.notifier.thresholds):
                await self._post(channel, reply, thread_ts=ts, what="digest detail")
        return Posted(ts=ts, message=_record(message))

    async def brief(self, channel: str, note: BriefNote) -> Posted:
        if note.missed:
            message = brief_missed(note.topic, meeting_at=note.meeting_at, reason=note.missed)
        else:
            record = note.record
            message = brief_message(
                note.topic, meeting_at=note.meeting_at,
                result=record.result if record else None,
                status=record.status if record else "not started", url=note.url,
                rehearsal=note.rehearsal)
        ts = await self._post(channel, message, what="brief")
        return Posted(ts=ts, error=None if ts else f"could not post to {channel}",
                      message=_record(message))

    async def _post(self, channel: str, message: Message, *, thread_ts: str | None = None,
                    what: str) -> str | None:
        try:
            return await self.notifier.post(channel, message, thread_ts=thread_ts)
        except SLACK_ERRORS as exc:
            log.warning("could not post %s to %s: %s", what, channel, slack_error(exc))
            return None


def _record(message: Message) -> dict[str, object]:
    return {"text": message.text, "blocks": message.blocks}
