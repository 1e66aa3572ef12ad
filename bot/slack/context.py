"""What every Slack listener shares: the runtime, Slack's settings, the Web API client, the
notifier and the scheduler; the service's operations through the runtime."""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.scheduling.scheduler import Scheduler
from bot.service.debates import DebateService
from bot.service.feedback import FeedbackDesk
from bot.service.reviews import ReviewDesk
from bot.service.runtime import Runtime
from bot.slack.acks import Answering
from bot.slack.clients import current
from bot.slack.notifier import SlackNotifier
from bot.slack.settings import SlackSettings
from engine.settings import EngineSettings
from storage import dedupe

log = logging.getLogger("dialectic.slack")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SlackContext:
    rt: Runtime
    settings: SlackSettings
    base_client: AsyncWebClient
    notifier: SlackNotifier
    scheduler: Scheduler
    #: the requests being answered (bot/slack/acks.py): work after an ack waits for them
    answering: Answering = field(default_factory=Answering)

    @property
    def client(self) -> AsyncWebClient:
        """The client Bolt authorised the request with (its workspace's token)."""
        return current(self.base_client)

    @property
    def reviews(self) -> ReviewDesk:
        return self.rt.reviews

    @property
    def feedback(self) -> FeedbackDesk:
        return FeedbackDesk(self.rt.service)

    @property
    def engine(self) -> EngineSettings:
        return self.rt.engine

    @property
    def rehearsal(self) -> bool:
        return self.rt.is_rehearsal

    @property
    def service(self) -> DebateService:
        return self.rt.service

    async def track(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a listener's work after its ack so that shutdown waits for it (see notifier)."""
        return await self.notifier.tracked(work)

    async def first_time(self, source: str, key: str | None) -> bool:
        """True the first time Slack delivers (source, key); retries and replicas get False.

        A database unique key decides, so two replicas receiving the same delivery agree."""
        if not key:
            return True
        async with self.rt.db.transaction() as session:
            first = await dedupe.first_time(session, source=source, key=key)
        if not first:
            log.info("ignoring a repeated Slack delivery (%s %s)", source, key)
        return first


__all__ = ["SlackContext"]
