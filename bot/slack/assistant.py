"""The DM thread's AI-app furniture: the status line that follows a debate, the thread's title
and the suggested prompts (`assistant.threads.setStatus` / `setTitle` / `setSuggestedPrompts`).

`DmStatus` is a sink factory and finished hook beside the notifier's (registered in
bot/slack/wiring.py): for a debate whose thread is in a DM it folds the engine's events into
the same `Progress` the status message shows and sets the status line when its words change.
Slack clears the status whenever the app sends a message in the thread, so every status goes
through the channel's FIFO pacing queue, behind the posts queued before it, and is set again
after each message that clears it: a phase's reply (the status message's way), or the plan's
start (chat.startStream sends the plan's message; its appends and stop send none, so while the
plan streams the status stays). Slack also removes a status after two minutes without a message:
while the debate runs the current status is re-sent every `slack_status_refresh` seconds (one
timer per DM debate, cancelled when it finishes). When the debate finishes the keeping alive
stops, and the thread's delivery clears the status once the result is out (bot/slack/delivery.py).
Like the notifier's sink it never blocks the engine and never raises into it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bot.service.progress import Progress, progress_for
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.clients import using
from bot.slack.notifier import SlackNotifier, Thread, thread_of
from bot.slack.views.assistant import PROMPTS_TITLE, status_line, suggested_prompts, thread_title
from engine.core.presets import all_presets
from engine.domain import Event, EventKind
from engine.ports import EventSink
from storage.records import DebateRecord, Origin, Review

log = logging.getLogger("dialectic.slack.assistant")

DM_PREFIX = "D"   # Slack's ids of direct-message conversations start with D
#: A debate silent this long (no event) is no longer kept alive: its run has gone elsewhere.
IDLE_MAX = 30 * 60.0


def is_dm(channel_id: str | None) -> bool:
    return bool(channel_id) and str(channel_id).startswith(DM_PREFIX)


class DmStatus:
    """Keeps the status line of DM debates; one per notifier (process)."""

    def __init__(self, notifier: SlackNotifier, *, refresh: float | None = None) -> None:
        self.n = notifier
        self.refresh = notifier.settings.slack_status_refresh if refresh is None else refresh
        self.live: dict[str, StatusSink] = {}
        notifier.stream_started.append(self.restore)
        notifier.closing.append(self.close)

    def sink_for(self, record: DebateRecord) -> EventSink | None:
        thread = thread_of(record)
        if not record.id or thread is None or not is_dm(thread.channel_id):
            return None
        sink = StatusSink(self, record, thread)
        self.live[record.id] = sink
        return sink

    def restore(self, debate_id: str) -> None:
        """The debate's plan started streaming, a message that cleared the status: set it again."""
        sink = self.live.get(debate_id)
        if sink is not None:
            sink.resend()

    async def on_finished(self, record: DebateRecord, review: Review | None) -> None:
        """Stop keeping the status alive; the thread's delivery (bot/slack/delivery.py) clears
        it once the result is out."""
        sink = self.live.pop(record.id, None)
        if sink is not None:
            sink.stop()

    def close(self) -> None:
        for sink in list(self.live.values()):
            sink.stop()
        self.live.clear()

    def set_soon(self, thread: Thread, status: str, origin: Origin | None = None) -> None:
        """Queue the status behind everything already queued for the channel; never raises."""
        self.n.spawn(self.set(thread, status, origin))

    async def set(self, thread: Thread, status: str, origin: Origin | None = None) -> None:
        """With `origin`, with the client of the debate's workspace."""
        client = await self.n.clients.for_origin(origin) if origin is not None else None
        with using(client):
            await set_status(self.n, thread, status)


async def set_status(notifier: SlackNotifier, thread: Thread, status: str) -> None:
    """assistant.threads.setStatus through the channel's queue; a failure is logged."""
    client = notifier.client   # the work's workspace's, read before the queue runs it

    async def call() -> None:
        await client.assistant_threads_setStatus(
            channel_id=thread.channel_id, thread_ts=thread.ts, status=status)

    await notifier.logged(notifier.pacer.submit(thread.channel_id, call), "a DM status")


class StatusSink:
    """One DM debate run's status line; `emit` only folds and queues."""

    def __init__(self, owner: DmStatus, record: DebateRecord, thread: Thread) -> None:
        self.owner = owner
        self.thread = thread
        self.record_id = record.id
        self.origin = record.origin
        self.progress: Progress = progress_for(owner.n.rt.engine, record.request)
        self.rehearsal = owner.n.rt.engine.is_rehearsal
        self.text = ""                  # the status the thread should show now
        self.shown: str | None = None   # None: Slack may have cleared it (a message since)
        self.done = False
        self._last_event = 0.0
        self._keeper: asyncio.Task[None] | None = None

    async def emit(self, event: Event) -> None:
        try:
            self._handle(event)
        except Exception:  # a status bug must never stop or fail a debate
            log.exception("DM status failed on %s for debate %s", event.kind, self.record_id)

    def _handle(self, event: Event) -> None:
        self.rehearsal = self.rehearsal or event.rehearsal
        self.progress.apply_event(event)
        if self.done:
            return
        if event.kind is EventKind.DEBATE_FINISHED:
            self.stop()   # the finished hook clears it once the result is out
            return
        if event.kind is EventKind.PHASE_FINISHED and \
                self.owner.n.posts_phase_replies(self.record_id):
            self.shown = None   # the phase's reply, queued before us, clears the status
        self.text = status_line(self.progress, rehearsal=self.rehearsal)
        if self.text != self.shown:
            self.resend()
        self._last_event = asyncio.get_running_loop().time()
        if self._keeper is None and self.owner.refresh > 0:
            self._keeper = asyncio.create_task(self._keep_alive())

    def resend(self) -> None:
        """Queue the current status (again)."""
        if self.done or not self.text:
            return
        self.shown = self.text
        self.owner.set_soon(self.thread, self.text, self.origin)

    async def _keep_alive(self) -> None:
        """Re-send the status before Slack's two minutes without a message remove it."""
        loop = asyncio.get_running_loop()
        while not self.done:
            await asyncio.sleep(self.owner.refresh)
            if loop.time() - self._last_event > IDLE_MAX:
                self.stop()   # no event for long: the run is no longer here
            self.resend()

    def stop(self) -> None:
        self.done = True
        if self.owner.live.get(self.record_id) is self:
            del self.owner.live[self.record_id]
        if self._keeper is not None and self._keeper is not asyncio.current_task():
            self._keeper.cancel()


async def announce(notifier: SlackNotifier, thread: Thread, topic: str, *,
                   rehearsal: bool) -> None:
    """A debate was just started in a DM thread: its title, and the first status line."""
    try:
        await notifier.client.assistant_threads_setTitle(
            channel_id=thread.channel_id, thread_ts=thread.ts, title=thread_title(topic))
    except SLACK_ERRORS as exc:
        log.info("could not title the DM thread %s: %s", thread.ts, slack_error(exc))
    await set_status(notifier, thread, status_line(Progress(), rehearsal=rehearsal))


async def offer_prompts(notifier: SlackNotifier, thread: Thread, presets: Sequence[str]) -> None:
    """A new assistant thread: the presets as suggested prompts."""
    try:
        await notifier.client.assistant_threads_setSuggestedPrompts(
            channel_id=thread.channel_id, thread_ts=thread.ts,
            prompts=suggested_prompts(presets), title=PROMPTS_TITLE)
    except SLACK_ERRORS as exc:
        log.warning("could not set suggested prompts in %s: %s", thread.channel_id,
                    slack_error(exc))


def preset_names(notifier: SlackNotifier) -> list[str]:
    return list(all_presets(notifier.rt.engine))


__all__ = ["DmStatus", "StatusSink", "announce", "is_dm", "offer_prompts", "preset_names",
           "set_status"]
