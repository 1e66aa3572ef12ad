"""Finishing Slack starts another process left unfinished (storage/starts.py).

A person typed `/debate`, Slack showed our "starting…" ack, and the process that took it died
before submitting the debate. Slack will not send the command again, so the start written down
before the ack is the only trace of it. Every process that delivers to Slack (its dispatcher,
bot/slack/delivery.py) looks for starts whose lease ran out and finishes them as the listener
would have: the "starting" message is reused when it was posted (else posted now), the debate is
submitted with the start's idempotency key (a submission that went through just before the crash
is found, not repeated), and the start is marked through. A start older than Slack's
`response_url` (30 minutes) or tried too often is given up: its message, when there is one, says
that it was not started and why, so nobody waits on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from bot.service.debates import DebateService
from bot.service.runtime import Runtime
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.clients import using
from bot.slack.notifier import SlackNotifier
from bot.slack.starter import NotInChannel, Opening, Place, open_debate, start_lease, submit_opening
from bot.slack.views import notices
from engine.domain import DebateRequest, utcnow
from engine.errors import InvalidRequest
from storage import starts
from storage.errors import DATABASE_ERRORS

log = logging.getLogger("dialectic.slack")

GIVE_UP_AFTER = timedelta(minutes=30)   # a slash command's response_url lives this long
MAX_ATTEMPTS = 5
BATCH = 10
RETRIED: tuple[type[BaseException], ...] = (*SLACK_ERRORS, *DATABASE_ERRORS)
GAVE_UP = ("the server stopped before this debate began, and it could not be started "
           "afterwards; ask again with /debate")


@dataclass(frozen=True, slots=True)
class _Door:
    """What the starter needs (starter.Starts), from the notifier alone."""

    notifier: SlackNotifier

    @property
    def rt(self) -> Runtime:
        return self.notifier.rt

    @property
    def service(self) -> DebateService:
        return self.notifier.rt.service

    @property
    def rehearsal(self) -> bool:
        return self.notifier.rt.is_rehearsal


class StartRecovery:
    """Claims starts whose lease ran out and finishes them (one round per dispatcher round)."""

    def __init__(self, notifier: SlackNotifier, *, owner: str) -> None:
        self.door = _Door(notifier)
        self.owner = owner

    async def round(self) -> int:
        """Finish what is stale now; how many starts were taken."""
        db, now = self.door.rt.db, utcnow()
        async with db.transaction(readonly=True) as session:
            if not await starts.any_stale(session, now=now):
                return 0
        async with db.transaction() as session:
            taken = await starts.claim_stale(session, owner=self.owner, now=now,
                                             lease_seconds=start_lease(self.door.rt),
                                             limit=BATCH)
        for start in taken:
            await self.finish(start)
        return len(taken)

    async def finish(self, start: starts.Start) -> None:
        try:
            place = Place(**start.place)
            request = DebateRequest.model_validate(start.request)
        except (TypeError, ValueError) as exc:   # written by a release that read otherwise
            await self._end(start, starts.FAILED, error=f"unreadable start: {exc}")
            log.warning("Slack: gave up the start %s: it cannot be read (%s)", start.key, exc)
            return
        # the workspace's own client (multi-workspace mode), bound as a request's would be
        client = await self.door.notifier.clients.for_workspace(team_id=place.team_id)
        if client is None:
            await self._end(start, starts.FAILED, error="its workspace is no longer installed")
            return
        with using(client):
            await self._finish(start, place, request)

    async def _finish(self, start: starts.Start, place: Place, request: DebateRequest) -> None:
        if utcnow() - start.created_at > GIVE_UP_AFTER or start.attempts > MAX_ATTEMPTS:
            await self._give_up(start, place)
            return
        try:
            if start.message_ts is None:
                opening = await open_debate(self.door, request, place)
            else:
                estimate = await self.door.service.estimate(request)
                opening = Opening(request, place, estimate, start.message_ts)
            started = await submit_opening(self.door, opening, idempotency_key=start.key)
        except (NotInChannel, InvalidRequest) as exc:
            await self._end(start, starts.FAILED, error=str(exc))
            return
        except RETRIED as exc:   # its lease runs out: tried again
            log.warning("Slack: could not finish the start %s yet (%s)", start.key,
                        slack_error(exc) if isinstance(exc, SLACK_ERRORS) else exc)
            return
        debate = started.submission.record.id if started.submission else None
        await self._end(start, starts.DONE, debate_id=debate)
        log.info("Slack: finished the start %s that a stopped process left (debate %s)",
                 start.key, debate or "refused, the message says why")

    async def _give_up(self, start: starts.Start, place: Place) -> None:
        if start.message_ts is not None:
            try:
                await self.door.notifier.update(place.channel_id, start.message_ts,
                                                notices.not_started(GAVE_UP))
            except SLACK_ERRORS as exc:
                log.warning("Slack: could not mark the start %s as not started (%s)",
                            start.key, slack_error(exc))
        await self._end(start, starts.FAILED, error="gave up: " + GAVE_UP)
        log.warning("Slack: gave up the start %s (asked %s, %d attempts)", start.key,
                    start.created_at.isoformat(timespec="seconds"), start.attempts)

    async def _end(self, start: starts.Start, status: starts.StartStatus, *,
                   debate_id: str | None = None, error: str = "") -> None:
        async with self.door.rt.db.transaction() as session:
            await starts.ended(session, start.key, status=status, now=utcnow(),
                               debate_id=debate_id, error=error)


__all__ = ["GIVE_UP_AFTER", "MAX_ATTEMPTS", "StartRecovery"]
