"""Delivering what finished debates owe Slack: the outbox's dispatcher (storage/outbox.py).

Each process that posts to Slack runs one `SlackDispatcher`. It claims due obligations with a
lease, delivers each debate's in order (the thread's end and summary, then the review request),
and records every answer Slack gives as it comes (`Steps`): a step is marked before it is sent
and its answer written after, so a retry skips what is done. A step whose answer was lost (the
process died, or the connection broke, after Slack had posted) is looked for before it is sent
again: every message the dispatcher posts carries its step in the message's metadata, and the
thread's replies (or the channel's recent history) are searched for it. What fails is tried again
with a capped, jittered backoff, after a restart too; what still fails after `MAX_ATTEMPTS` is
kept as failed, with why (the console lists it, /healthz counts it).

The finished debate's worker is not involved: the service wrote the obligations with the result
(bot/service/delivery.py), so neither the lease renewer nor a kill can lose them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from bot.service.worker import worker_name
from bot.service.workspace_settings import review_channel_for
from bot.slack.assistant import is_dm, set_status
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.clients import using
from bot.slack.notifier import SlackNotifier, Thread, thread_of
from bot.slack.recovery import StartRecovery
from bot.slack.views import notices
from bot.slack.views.common import Message
from bot.slack.views.entities import debate_entity
from bot.slack.views.review import review_request
from engine.domain import Event, EventKind, utcnow
from storage import audit, debates, outbox, reviews
from storage.errors import DATABASE_ERRORS, NotFound
from storage.outbox import Delivery, Unfurl
from storage.records import DebateRecord, Review, ReviewStatus

log = logging.getLogger("dialectic.slack.delivery")

EVENT_TYPE = "dialectic_delivery"   # the metadata every delivered message carries
MAX_ATTEMPTS = 12                   # about 1.5 hours of tries at the capped backoff
FIRST_RETRY_S = 5.0
RETRY_CAP_S = 900.0
MIN_LEASE_S = 5.0
BATCH = 20
IN_HAND = 200                       # obligations one dispatcher delivers at once, at most
HANDOVER_POLLS, HANDOVER_POLL_S = 40, 0.05   # up to 2 s for a finishing debate's sink
EVENTS_READ = 5000                  # stored events read to rebuild a thread's final state
#: what a delivery attempt may meet that a later attempt may not: Slack's answers and the network
#: (SLACK_ERRORS), the database away for a moment
RETRIED: tuple[type[BaseException], ...] = (*SLACK_ERRORS, *DATABASE_ERRORS)


class LostClaim(Exception):
    """Another dispatcher took the obligation (this one's lease ran out): stop, quietly."""


def retry_delay(attempts: int, rng: random.Random) -> float:
    return min(FIRST_RETRY_S * 2.0 ** attempts, RETRY_CAP_S) * rng.uniform(0.5, 1.0)


class Steps:
    """An obligation's steps: each sent at most once, its answer recorded as soon as it comes."""

    def __init__(self, dispatcher: SlackDispatcher, delivery: Delivery) -> None:
        self.d = dispatcher
        self.id = delivery.id
        self.state: dict[str, Any] = dict(delivery.state)
        self.done: dict[str, Any] = self.state.setdefault("done", {})
        self.sending: dict[str, str] = self.state.setdefault("sending", {})

    def marker(self, name: str) -> str:
        return f"{self.id}:{name}"

    def retrying(self, name: str) -> bool:
        """Whether `name` was sent before without its answer being recorded."""
        return name in self.sending

    async def save(self) -> None:
        async with self.d.db.transaction() as session:
            kept = await outbox.save_state(session, self.id, owner=self.d.owner,
                                           state=self.state, now=self.d.clock(),
                                           lease_seconds=self.d.lease)
        if not kept:
            raise LostClaim(self.id)

    async def run(self, name: str, send: Callable[[], Awaitable[Any]],
                  find: Callable[[], Awaitable[Any]] | None = None) -> Any:
        """Send step `name` once; a step sent before whose answer is unknown is first looked for
        with `find` (None: not found)."""
        if name in self.done:
            return self.done[name]
        if name in self.sending and find is not None:
            found = await find()
            if found is not None:
                return await self._record(name, found)
        self.sending[name] = self.d.clock().isoformat()
        await self.save()
        return await self._record(name, await send())

    async def _record(self, name: str, answer: Any) -> Any:
        self.done[name] = answer
        self.sending.pop(name, None)
        await self.save()
        return answer

    async def post(self, name: str, channel: str, message: Message, *,
                   thread_ts: str | None = None) -> str:
        """A message posted once (through the channel's pacing queue); its ts."""
        n = self.d.notifier
        marker = self.marker(name)

        async def send() -> str:
            client = n.client   # the debate's workspace's, read before the queue runs it

            async def call() -> str:
                reply = await client.chat_postMessage(
                    channel=channel, thread_ts=thread_ts, unfurl_links=False,
                    unfurl_media=False, metadata={"event_type": EVENT_TYPE,
                                                  "event_payload": {"delivery": marker}},
                    **message.kwargs())
                return str(reply["ts"])
            return await n.pacer.run(channel, call)

        async def find() -> str | None:
            return await self.d.find_posted(channel, marker, thread_ts=thread_ts)

        return str(await self.run(name, send, find))


class SlackDispatcher:
    """Delivers the outbox's Slack obligations for this process; see the module's docstring."""

    def __init__(self, notifier: SlackNotifier, *, poll: float = 2.0,
                 clock: Callable[[], datetime] = utcnow, owner: str | None = None) -> None:
        self.notifier = notifier
        self.db = notifier.rt.db
        self.poll = poll
        self.clock = clock
        self.owner = owner or f"slack-{worker_name()}"
        #: how long a claim holds without news (each step sent extends it): a process that died
        #: mid-delivery gives its obligations back after this (DIALECTIC_LEASE_SECONDS)
        self.lease = max(notifier.rt.settings.lease_seconds, MIN_LEASE_S)
        self.wakeup = asyncio.Event()
        self.rng = random.Random()
        self.delivering: set[asyncio.Task[None]] = set()
        self.in_hand: set[int] = set()   # claimed here and not finished: never claimed again
        notifier.finished.append(self.notify)
        notifier.rt.delivery_wakers.append(self.notify)
        self.starts = StartRecovery(notifier, owner=self.owner)   # starts a dead process left
        self.starting: asyncio.Task[None] | None = None
        self.starts_looked = float("-inf")   # monotonic time of the last look for them

    def notify(self) -> None:
        """A debate finished: look at the outbox now rather than at the next poll."""
        self.wakeup.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop`: claim what is due and deliver it; in-flight deliveries are given a
        moment to finish at the end, then left to their lease (another process retakes them)."""
        log.info("Slack deliveries: dispatcher %s started", self.owner)
        try:
            while not stop.is_set():
                try:
                    self._recover_starts()
                    claimed = await self.round()
                except DATABASE_ERRORS as exc:
                    log.warning("Slack deliveries: cannot read the outbox (%s); retrying", exc)
                    claimed = 0
                except Exception:   # a bug must not end deliveries for the process's life
                    log.exception("Slack deliveries: a round failed; trying again")
                    claimed = 0
                if claimed < BATCH:
                    await self._wait(stop)
        finally:
            if self.starting is not None:   # a start being finished is left to its lease
                self.starting.cancel()
                await asyncio.gather(self.starting, return_exceptions=True)
            if self.delivering:
                _, pending = await asyncio.wait(self.delivering, timeout=5.0)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)

    async def _wait(self, stop: asyncio.Event) -> None:
        self.wakeup.clear()
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wakeup.wait())]
        try:
            await asyncio.wait(waiters, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def round(self) -> int:
        """Claim what is due and start delivering it (each debate's obligations in order, the
        debates side by side); how many were claimed."""
        room = min(BATCH, IN_HAND - len(self.in_hand))
        if room <= 0:
            return 0
        async with self.db.transaction(readonly=True) as session:
            if not await outbox.any_due(session, now=self.clock()):
                return 0
        async with self.db.transaction() as session:
            due = await outbox.claim_due(session, owner=self.owner, now=self.clock(),
                                         lease_seconds=self.lease, limit=room,
                                         exclude=sorted(self.in_hand))
        by_debate: dict[str, list[Delivery]] = {}
        for delivery in due:
            self.in_hand.add(delivery.id)
            by_debate.setdefault(delivery.debate_id, []).append(delivery)
        for owed in by_debate.values():
            task = asyncio.create_task(self._deliver_all(owed))
            self.delivering.add(task)
            task.add_done_callback(self.delivering.discard)
        return len(due)

    def _recover_starts(self) -> None:
        """Slack starts left unfinished by a process that died (bot/slack/recovery.py), in a task
        of their own beside the deliveries; one round at a time."""
        # once a poll at most: a dispatcher woken by every finishing debate does not read for
        # stale starts each time (a start is only stale after its lease, seconds at least)
        now = time.monotonic()
        if now - self.starts_looked < self.poll:
            return
        if self.starting is None or self.starting.done():
            self.starts_looked = now
            self.starting = asyncio.create_task(self._starts_round(), name="slack-starts")

    async def _starts_round(self) -> None:
        try:
            await self.starts.round()
        except DATABASE_ERRORS as exc:
            log.warning("Slack starts: cannot read them (%s); retrying", exc)
        except Exception:   # a bug must not end the recovery for the process's life
            log.exception("Slack starts: a round failed; trying again")

    async def drain(self) -> None:
        """Until nothing this dispatcher started is still being delivered (tests, shutdown)."""
        while self.delivering:
            await asyncio.gather(*list(self.delivering), return_exceptions=True)

    async def _deliver_all(self, owed: list[Delivery]) -> None:
        try:
            for delivery in owed:
                await self.deliver(delivery)
        finally:
            self.in_hand.difference_update(d.id for d in owed)

    async def deliver(self, delivery: Delivery) -> None:
        steps = Steps(self, delivery)
        try:
            await self._handle(delivery, steps)
        except LostClaim:
            log.info("Slack deliveries: %s was taken over by another dispatcher", delivery.id)
            return
        except RETRIED as exc:
            await self._failed(delivery, steps, slack_error(exc))
            return
        except Exception as exc:  # a bug: recorded on the obligation, retried, logged
            log.exception("Slack deliveries: %s of debate %s failed", delivery.kind,
                          delivery.debate_id)
            await self._failed(delivery, steps, f"{type(exc).__name__}: {exc}")
            return
        async with self.db.transaction() as session:
            await outbox.delivered(session, delivery.id, owner=self.owner, state=steps.state,
                                   now=self.clock())

    async def _failed(self, delivery: Delivery, steps: Steps, error: str) -> None:
        attempts = delivery.attempts + 1
        retry_at = None if attempts >= MAX_ATTEMPTS else \
            self.clock() + timedelta(seconds=retry_delay(delivery.attempts, self.rng))
        if retry_at is None:
            log.error("Slack deliveries: gave up on the %s of debate %s after %d attempts: %s",
                      delivery.kind, delivery.debate_id, attempts, error)
        else:
            log.warning("Slack deliveries: the %s of debate %s failed (attempt %d: %s); "
                        "trying again at %s", delivery.kind, delivery.debate_id, attempts, error,
                        retry_at.strftime("%H:%M:%S"))
        with contextlib.suppress(*DATABASE_ERRORS):   # else the lease runs out: retried then
            async with self.db.transaction() as session:
                await outbox.failed_attempt(session, delivery.id, owner=self.owner, error=error,
                                            state=steps.state, now=self.clock(),
                                            retry_at=retry_at)

    async def _handle(self, delivery: Delivery, steps: Steps) -> None:
        async with self.db.transaction(readonly=True) as session:
            try:
                record = await debates.get(session, delivery.debate_id)
            except NotFound:
                steps.state["skipped"] = "the debate was deleted"
                return
            review = (await reviews.get(session, delivery.ref)
                      if delivery.kind == "review_request" else None)
        client = await self.notifier.clients.for_origin(record.origin)
        if client is None:   # multi-workspace mode: the debate's workspace is not installed
            steps.state["skipped"] = "the debate belongs to no installed Slack workspace"
            return
        with using(client):
            if delivery.kind == "thread_result":
                await self.thread_result(record, steps)
            elif delivery.kind == "work_objects":
                await self.work_objects(record, steps)
            elif review is not None:
                await self.review_request(record, review, steps)

    # --- the thread's result ---

    async def thread_result(self, record: DebateRecord, steps: Steps) -> None:
        """The live message ended (the plan stopped with the summary, or the status message
        final), the summary posted unless it went with the plan, a DM's status cleared."""
        n = self.notifier
        thread = thread_of(record)
        if thread is None:
            return

        async def settle() -> dict[str, bool]:
            await self._handed_over(record.id)
            events = [] if record.id in n.ended else await self.events_of(record.id)
            settled = await n.settle_thread(record, events, retrying=steps.retrying("settle"))
            return {"carried": settled.carried}

        settled = await steps.run("settle", settle)
        summary = n.summary_message(record)
        if summary is not None and not settled.get("carried"):
            await steps.post("summary", thread.channel_id, summary, thread_ts=thread.ts)
        if is_dm(thread.channel_id):
            await steps.run("status", lambda: self._clear_status(thread))

    async def _handed_over(self, debate_id: str) -> None:
        """A debate that ran here may still be live for a moment after its result committed
        (its finished hook hands its sink over just after): wait for that, briefly, so its own
        sink ends its thread rather than a copy rebuilt beside it."""
        for _ in range(HANDOVER_POLLS):
            if debate_id not in self.notifier.live:
                return
            await asyncio.sleep(HANDOVER_POLL_S)

    async def _clear_status(self, thread: Thread) -> bool:
        await set_status(self.notifier, thread, "")
        return True

    async def events_of(self, debate_id: str) -> list[Event]:
        """The debate's engine events as stored in its audit chain, oldest first."""
        async with self.db.transaction(readonly=True) as session:
            links = await audit.events(session, debate_id, limit=EVENTS_READ)
        found: list[Event] = []
        for link in links:
            try:
                kind = EventKind(link.kind)
            except ValueError:   # the service's own links (submitted, claimed, ...)
                continue
            found.append(Event(kind=kind, debate_id=debate_id, data=dict(link.data),
                               rehearsal=bool(link.data.get("rehearsal")), at=link.at))
        return found

    # --- the Work Objects ---

    async def work_objects(self, record: DebateRecord, steps: Steps) -> None:
        """Each card the debate's link unfurled into, shown again as the debate now stands
        (chat.unfurl on the same message replaces its card; sending it twice is harmless)."""
        n = self.notifier
        async with self.db.transaction(readonly=True) as session:
            places = await outbox.unfurls_of(session, record.id)
        result = record.result
        for place in places:
            entity = debate_entity(
                record, url=n.rt.settings.public_url.rstrip("/") + f"/debates/{record.id}",
                shared_url=place.url, details=False,
                thresholds=n.thresholds(result) if result is not None else None,
                rehearsal=result.rehearsal if result is not None else n.rt.is_rehearsal)

            async def send(place: Unfurl = place, entity: dict[str, Any] = entity) -> bool:
                await n.client.chat_unfurl(channel=place.channel_id, ts=place.message_ts,
                                           metadata={"entities": [entity]})
                return True

            await steps.run(f"{place.channel_id}:{place.message_ts}", send)

    # --- the review request ---

    async def review_request(self, record: DebateRecord, review: Review, steps: Steps) -> None:
        """The request in the review channel (its place stored on the review), and the thread
        told where it went; without a review channel, the thread told that instead."""
        n = self.notifier
        thread = thread_of(record)
        channel = await review_channel_for(self.db, record.origin.team_id,
                                           n.settings.review_channel)
        if not channel:
            log.warning("debate %s awaits review but DIALECTIC_REVIEW_CHANNEL is not set",
                        record.id)
            if thread is not None and not review.spot_check:
                await steps.post("no_channel", thread.channel_id, notices.no_review_channel(),
                                 thread_ts=thread.ts)
            return
        if record.result is None:
            return
        if review.status is not ReviewStatus.PENDING and "request" not in steps.done:
            steps.state["skipped"] = f"decided ({review.status.value}) before it was posted"
            return
        link = await n.permalink(thread)
        message = review_request(review, record.result, transcript_url=n.url(record.id),
                                 thread_link=link, thresholds=n.thresholds(record.result))
        ts = await steps.post("request", channel, message)
        async with self.db.transaction() as session:
            await reviews.set_message(session, review.id, channel, ts)
        if thread is not None and not review.spot_check:   # a spot check was published
            await steps.post("notice", thread.channel_id, notices.awaiting_review(channel),
                             thread_ts=thread.ts)

    # --- finding what was sent but not recorded ---

    async def find_posted(self, channel: str, marker: str, *, thread_ts: str | None
                          ) -> str | None:
        """The ts of the message carrying `marker` in its metadata, if Slack has it."""
        client = self.notifier.client
        if thread_ts:
            reply = await client.conversations_replies(channel=channel, ts=thread_ts, limit=200,
                                                       include_all_metadata=True)
        else:   # the channel's newest messages: the lost answer is a recent one
            reply = await client.conversations_history(channel=channel, limit=200,
                                                       include_all_metadata=True)
        for message in reply.get("messages") or []:
            payload = (message.get("metadata") or {}).get("event_payload") or {}
            if payload.get("delivery") == marker:
                log.info("Slack deliveries: %s was posted before (ts %s); not posting it again",
                         marker, message.get("ts"))
                return str(message["ts"])
        return None


__all__ = ["EVENT_TYPE", "MAX_ATTEMPTS", "SlackDispatcher", "Steps"]
