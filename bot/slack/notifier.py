"""Debate updates to Slack: the thread's status message, phase replies, summary and reviews.

`SlackNotifier.sink_for` is the service's sink factory: one `ThreadSink` per debate run whose
origin has a Slack thread. The sink never blocks the engine on Slack and never raises into it
(the engine's FanOutSink would re-raise): it folds events into the status (kept current with
coalesced `chat.update`s) and queues phase replies on the channel's pacing queue, logging any
failure. `on_finished` (the service's finished hook) only hands the debate's sink over: what a
finished debate owes Slack (the thread's end and summary, the review request) is in the outbox,
delivered by bot/slack/delivery.py with retries, from this process or any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.service.progress import progress_for
from bot.service.results import routed_by
from bot.service.runtime import Runtime
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.clients import WorkspaceClients, current
from bot.slack.limits import paced_limits
from bot.slack.pacing import ChannelPacer
from bot.slack.settings import SlackSettings
from bot.slack.views import debate as views
from bot.slack.views import notices
from bot.slack.views.common import Message
from bot.slack.views.feedback import feedback_blocks
from engine.domain import DebateResult, Event, EventKind, PhaseSummary
from engine.ports import EventSink
from engine.settings import ThresholdSpec
from storage import debates
from storage.records import DebateRecord, Review

log = logging.getLogger("dialectic.slack")

T = TypeVar("T")
SETTLE_TIMEOUT = 30.0
#: finished debates' sinks kept for the dispatcher of this process (the oldest dropped first: the
#: dispatcher rebuilds a sink it does not find from the debate's stored events)
ENDED_KEPT = 500


@dataclass(frozen=True, slots=True)
class Settled:
    """How the thread's live message ended: whether it carried the summary."""

    carried: bool


@dataclass(frozen=True, slots=True)
class Thread:
    channel_id: str
    ts: str


def thread_of(record: DebateRecord) -> Thread | None:
    """Where the debate's thread is, if it has one."""
    origin = record.origin
    if origin.channel_id and origin.thread_ts:
        return Thread(origin.channel_id, origin.thread_ts)
    return None


def result_message(record: DebateRecord, *, transcript_url: str,
                   thresholds: ThresholdSpec | None) -> Message | None:
    """The divergence summary with its feedback buttons, which no fitting ever cuts (an appeal
    resolved automatically is re-fitted under its own line: the buttons go in its uncut tail)."""
    result = record.result
    if result is None:
        return None
    feedback = feedback_blocks(record.id)
    resolved = record.preset == "appeal" and result.routing == "auto_approve"
    message = views.divergence_summary(result, transcript_url=transcript_url,
                                       thresholds=thresholds,
                                       actions=() if resolved else feedback)
    if resolved:
        message = notices.resolved(message, result, transcript_url=transcript_url,
                                   actions=feedback)
    return message


class SlackNotifier:
    """Posts through one Web API client and one per-channel pacing queue; owns its tasks."""

    def __init__(self, rt: Runtime, settings: SlackSettings, client: AsyncWebClient,
                 pacer: ChannelPacer, *, update_gap: float | None = None) -> None:
        self.rt = rt
        self.settings = settings
        self.base_client = client
        #: the client of each workspace (bot/slack/clients.py); multi-workspace mode sets it
        self.clients = WorkspaceClients(client, None)
        self.pacer = pacer
        # chat.update is rate limited per workspace: coalesce status updates more than posts
        self.update_gap = 3 * pacer.interval if update_gap is None else update_gap
        self.live: dict[str, EventSink] = {}
        #: sinks of debates that finished here, for the dispatcher (bot/slack/delivery.py)
        self.ended: dict[str, EventSink] = {}
        #: called when a debate finished here: the dispatcher looks for what it owes now
        self.finished: list[Callable[[], None]] = []
        #: called with a debate's id when its plan starts streaming (a new message in the thread)
        self.stream_started: list[Callable[[str], None]] = []
        self.closing: list[Callable[[], None]] = []   # called first by close()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def client(self) -> AsyncWebClient:
        """The client of the work in progress (its workspace's token), else the base one."""
        return current(self.base_client)

    async def client_for(self, record: DebateRecord) -> AsyncWebClient:
        """The client of the debate's workspace (multi-workspace mode: its own token, looked up
        by the debate's origin, whichever task runs the call), else the base one."""
        if self.clients.store is None:
            return self.base_client
        return await self.clients.for_origin(record.origin) or current(self.base_client)

    # --- Slack calls ---

    async def post(self, channel: str, message: Message, *, thread_ts: str | None = None
                   ) -> str:
        """chat.postMessage through the channel's pacing queue; the new message's ts."""
        client = self.client   # the workspace's, read now: the queue runs it elsewhere

        async def call() -> str:
            reply = await client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, unfurl_links=False, unfurl_media=False,
                **message.kwargs())
            return str(reply["ts"])

        return await self.pacer.run(channel, call)

    def post_soon(self, channel: str, message: Message, *, thread_ts: str | None = None,
                  what: str = "message") -> None:
        """Queue a post without waiting for it; a failure is logged."""
        self.spawn(self.logged(self.post(channel, message, thread_ts=thread_ts), what))

    async def update(self, channel: str, ts: str, message: Message, *,
                     client: AsyncWebClient | None = None) -> None:
        await (client or self.client).chat_update(channel=channel, ts=ts, **message.kwargs())

    async def logged(self, call: Awaitable[Any], what: str) -> None:
        try:
            await call
        except SLACK_ERRORS as exc:
            log.warning("Slack: could not post %s: %s", what, slack_error(exc))

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task held strongly until done; an unexpected error is logged."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._reap)
        return task

    async def tracked(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` (a listener's work after its ack) as a task this notifier holds and drains
        on shutdown: Bolt's own listener tasks are neither held nor awaited. Errors propagate
        to the caller (Bolt logs a failed listener)."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

    def _reap(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("Slack notifier task failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait until every queued post and update has been sent (or failed)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for closing in self.closing:
            closing()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.pacer.close()

    def posts_phase_replies(self, debate_id: str) -> bool:
        """Whether the debate's thread gets a reply per phase (the status message does)."""
        return True

    def url(self, debate_id: str) -> str:
        return self.rt.url(debate_id)

    def thresholds(self, result: DebateResult) -> ThresholdSpec | None:
        """The alpha cut-offs the result was routed by (its own record, else its preset's)."""
        return routed_by(self.rt.engine, result)

    # --- engine hooks ---

    def sink_for(self, record: DebateRecord) -> EventSink | None:
        """The service's sink factory: a ThreadSink for debates that have a Slack thread.

        A debate with only a channel (the scheduler's) gets no thread of its own: its
        submitter posts about it (one digest, one brief), not a thread per debate."""
        if not record.id or thread_of(record) is None:
            return None
        sink = ThreadSink(self, record)
        self.live[record.id] = sink
        return sink

    async def on_finished(self, record: DebateRecord, review: Review | None) -> None:
        """The service's finished hook, quick and Slack-free: the debate's live sink stops
        sending and is kept for the dispatcher, which is told to look at the outbox now."""
        sink = self.live.pop(record.id, None)
        if sink is not None:
            close = getattr(sink, "close", None)
            if close is not None:
                close()
            self.ended[record.id] = sink
            while len(self.ended) > ENDED_KEPT:
                self.ended.pop(next(iter(self.ended)))
        for wake in self.finished:
            wake()

    def replayed(self, record: DebateRecord, events: list[Event]) -> EventSink | None:
        """The sink a finished debate would have here, rebuilt from its stored events (it ran
        in another process, or before a restart)."""
        if thread_of(record) is None or not record.origin.status_ts:
            return None
        sink = ThreadSink(self, record)
        for event in events:
            sink.fold(event)
        return sink

    async def settle_thread(self, record: DebateRecord, events: list[Event] | None = None, *,
                            retrying: bool = False) -> Settled:
        """Bring the thread's live message to the finished record; `carried` when it carried
        the divergence summary itself (a streamed plan ends with it), so it is not posted again.
        `retrying`: an earlier attempt may have ended it already."""
        sink = self.ended.pop(record.id, None) or self.replayed(record, events or [])
        if isinstance(sink, ThreadSink):
            await sink.settle(record)
        return Settled(carried=False)

    def summary_message(self, record: DebateRecord) -> Message | None:
        """The result as the thread shows it (an appeal's resolution included)."""
        if record.result is None:
            return None
        return result_message(record, transcript_url=self.url(record.id),
                              thresholds=self.thresholds(record.result))

    async def post_summary(self, record: DebateRecord, thread: Thread) -> None:
        message = self.summary_message(record)
        if message is not None:
            await self.post(thread.channel_id, message, thread_ts=thread.ts)

    async def permalink(self, thread: Thread | None) -> str | None:
        if thread is None:
            return None
        try:
            reply = await self.client.chat_getPermalink(channel=thread.channel_id,
                                                        message_ts=thread.ts)
        except SLACK_ERRORS as exc:
            log.info("no permalink for %s/%s (%s): the review request goes without it",
                     thread.channel_id, thread.ts, slack_error(exc))
            return None
        return str(reply.get("permalink") or "") or None


@contextlib.asynccontextmanager
async def _room_for_update(client: AsyncWebClient) -> AsyncIterator[None]:
    """Status updates go one at a time per workspace, each waiting while the workspace's minute
    of chat.update is used up rather than risk a 429 (bot/slack/limits.py)."""
    limits = paced_limits(client)
    if limits is None:
        yield
        return
    token = client.token or ""
    async with limits.turn(token, "chat.update"):
        await limits.room(token, "chat.update")
        yield


class ThreadSink:
    """One debate run's Slack updates. `emit` only records and queues: it never waits on Slack.

    The status message is queued first on the channel's FIFO pacing queue, so phase replies
    always land below it.
    """

    def __init__(self, notifier: SlackNotifier, record: DebateRecord) -> None:
        self.n = notifier
        self.record = record
        self.channel = record.origin.channel_id or ""
        self.thread_ts = record.origin.thread_ts
        self.status_ts = record.origin.status_ts
        engine = notifier.rt.engine
        self.progress = progress_for(engine, record.request)
        self.rehearsal = engine.is_rehearsal
        self.final = False
        self._opened = self.status_ts is not None
        self._dirty = False
        self._closed = False
        self._flusher: asyncio.Task[None] | None = None

    async def emit(self, event: Event) -> None:
        try:
            self._handle(event)
        except Exception:  # a notifier bug must never stop or fail a debate
            log.exception("Slack sink failed on %s for debate %s", event.kind, self.record.id)

    def fold(self, event: Event) -> None:
        """Take in a stored event without sending anything (a sink rebuilt after the fact)."""
        self.rehearsal = self.rehearsal or event.rehearsal
        self.progress.apply_event(event)

    def close(self) -> None:
        """The debate finished: nothing more is sent until `settle`."""
        self._closed = True

    def _handle(self, event: Event) -> None:
        self.rehearsal = self.rehearsal or event.rehearsal
        if not self._opened:
            self._open()
        if event.kind is EventKind.PHASE_FINISHED:
            self._reply(event)
        if self.progress.apply_event(event):
            self._touch()

    def _open(self) -> None:
        """Queue the status message now, ahead of anything else this debate posts."""
        self._opened = True
        posted = self.n.pacer.submit(self.channel, self._post_status)
        self._flusher = self.n.spawn(self._after_status(posted))

    def _queue(self, call: Callable[[], Awaitable[Any]], what: str) -> None:
        """Submit to the channel's FIFO queue synchronously (order kept); log a failure."""
        self.n.spawn(self.n.logged(self.n.pacer.submit(self.channel, call), what))

    async def _after_status(self, posted: Awaitable[None]) -> None:
        await self.n.logged(posted, "the status message")
        await self._flush()

    async def _post_status(self) -> None:
        self._dirty = False
        client = await self.n.client_for(self.record)
        reply = await client.chat_postMessage(
            channel=self.channel, thread_ts=self.thread_ts, unfurl_links=False,
            unfurl_media=False, **self._render().kwargs())
        self.status_ts = str(reply["ts"])
        origin = self.record.origin.model_copy(update={"status_ts": self.status_ts})
        async with self.n.rt.db.transaction() as session:
            await debates.update_origin(session, self.record.id, origin)

    def _render(self) -> Message:
        return views.status(self.record, self.progress, rehearsal=self.rehearsal,
                            transcript_url=self.n.url(self.record.id), final=self.final)

    def _reply(self, event: Event) -> None:
        data = event.data
        summary = PhaseSummary(
            name=str(data.get("phase") or ""), highlights=dict(data.get("highlights") or {}),
            degraded=list(data.get("degraded") or []), filtered=list(data.get("filtered") or []),
            elapsed_seconds=float(data.get("elapsed_seconds") or 0.0))
        message = views.phase_reply(summary, rehearsal=self.rehearsal or event.rehearsal,
                                    transcript_url=self.n.url(self.record.id))

        async def call() -> None:
            await (await self.n.client_for(self.record)).chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, unfurl_links=False,
                unfurl_media=False, **message.kwargs())

        self._queue(call, f"the {summary.name} phase reply")

    def _touch(self) -> None:
        self._dirty = True
        if self._flusher is None or self._flusher.done():
            self._flusher = self.n.spawn(self._flush())

    async def _flush(self) -> None:
        """Coalesced chat.update: only the latest state is sent, at most once per update_gap."""
        while self._dirty and self.status_ts is not None and not self._closed:
            client = await self.n.client_for(self.record)
            async with _room_for_update(client):
                self._dirty = False
                try:
                    await self.n.update(self.channel, self.status_ts, self._render(),
                                        client=client)
                except SLACK_ERRORS as exc:
                    log.warning("Slack: could not update the status of %s: %s", self.record.id,
                                slack_error(exc))
            if self._dirty:
                await asyncio.sleep(self.n.update_gap)

    async def settle(self, record: DebateRecord) -> None:
        """Show the stored, finished record in the status message; wait for it to be sent, unless
        the workspace's chat.update minute is spent (it is sent when there is room)."""
        self.record, self.final = record, True
        self.rehearsal = self.rehearsal or bool(record.result and record.result.rehearsal)
        running = self._flusher
        if running is not None and not running.done():
            if self.status_ts is not None:  # only coalesced updates left: the final one wins
                running.cancel()
            await asyncio.wait({running}, timeout=SETTLE_TIMEOUT)  # its errors are logged
        self._dirty, self._closed = True, False
        final = self.n.spawn(self._flush())   # never cancelled: the status ends final
        client = await self.n.client_for(self.record)
        limits = paced_limits(client)
        if limits is None or not limits.saturated(client.token or "", "chat.update"):
            await asyncio.wait({final}, timeout=SETTLE_TIMEOUT)
        # else it waits for room in chat.update's minute: the result need not wait for it


__all__ = ["SLACK_ERRORS", "Settled", "SlackNotifier", "Thread", "ThreadSink", "result_message",
           "slack_error", "thread_of"]
