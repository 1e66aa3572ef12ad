"""The DM thread's AI-app furniture: the status line that follows a debate, the thread's title
and the suggested prompts (`assistant.threads.setStatus` / `setTitle` / `setSuggestedPrompts`).

`DmStatus` is a sink factory and finished hook beside the notifier's (registered in
bot/slack/wiring.py): for a debate whose thread is in a DM it folds the engine's events into
the same `Progress` the status message shows and sets the status line when its words change.
Slack clears the status whenever the app posts in the thread (the phase replies, the result), so
every status goes through the channel's FIFO pacing queue, behind the posts queued before it, and
is set again after each phase's reply; when the debate finishes it is cleared. Like the
notifier's sink it never blocks the engine and never raises into it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.service.progress import Progress, progress_for
from bot.slack.client import SLACK_ERRORS, slack_error
from bot.slack.notifier import SlackNotifier, Thread, thread_of
from bot.slack.views.assistant import PROMPTS_TITLE, status_line, suggested_prompts, thread_title
from engine.domain import Event, EventKind
from engine.ports import EventSink
from engine.presets import all_presets
from storage.records import DebateRecord, Review

log = logging.getLogger("dialectic.slack.assistant")

DM_PREFIX = "D"   # Slack's ids of direct-message conversations start with D


def is_dm(channel_id: str | None) -> bool:
    return bool(channel_id) and str(channel_id).startswith(DM_PREFIX)


class DmStatus:
    """Keeps the status line of DM debates; one per notifier (process)."""

    def __init__(self, notifier: SlackNotifier) -> None:
        self.n = notifier

    def sink_for(self, record: DebateRecord) -> EventSink | None:
        thread = thread_of(record)
        if not record.id or thread is None or not is_dm(thread.channel_id):
            return None
        return StatusSink(self, record, thread)

    async def on_finished(self, record: DebateRecord, review: Review | None) -> None:
        """The result is posted (which clears the status); clear it all the same, in case the
        post failed or nothing was posted."""
        thread = thread_of(record)
        if thread is not None and is_dm(thread.channel_id):
            await self.set(thread, "")

    def set_soon(self, thread: Thread, status: str) -> None:
        """Queue the status behind everything already queued for the channel; never raises."""
        self.n.spawn(self.set(thread, status))

    async def set(self, thread: Thread, status: str) -> None:
        async def call() -> None:
            await self.n.client.assistant_threads_setStatus(
                channel_id=thread.channel_id, thread_ts=thread.ts, status=status)

        await self.n.logged(self.n.pacer.submit(thread.channel_id, call), "a DM status")


class StatusSink:
    """One DM debate run's status line; `emit` only folds and queues."""

    def __init__(self, owner: DmStatus, record: DebateRecord, thread: Thread) -> None:
        self.owner = owner
        self.thread = thread
        self.record_id = record.id
        self.progress: Progress = progress_for(owner.n.rt.engine, record.request)
        self.rehearsal = owner.n.rt.engine.is_rehearsal
        self.shown: str | None = None   # None: Slack may have cleared it (a post since)

    async def emit(self, event: Event) -> None:
        try:
            self._handle(event)
        except Exception:  # a status bug must never stop or fail a debate
            log.exception("DM status failed on %s for debate %s", event.kind, self.record_id)

    def _handle(self, event: Event) -> None:
        self.rehearsal = self.rehearsal or event.rehearsal
        self.progress.apply_event(event)
        if event.kind is EventKind.DEBATE_FINISHED:
            return   # the finished hook clears it once the result is posted
        if event.kind is EventKind.PHASE_FINISHED:
            self.shown = None   # the phase's reply, queued before us, clears the status
        text = status_line(self.progress, rehearsal=self.rehearsal)
        if text != self.shown:
            self.shown = text
            self.owner.set_soon(self.thread, text)


async def announce(notifier: SlackNotifier, thread: Thread, topic: str, *,
                   rehearsal: bool) -> None:
    """A debate was just started in a DM thread: its title, and the first status line."""
    try:
        await notifier.client.assistant_threads_setTitle(
            channel_id=thread.channel_id, thread_ts=thread.ts, title=thread_title(topic))
    except SLACK_ERRORS as exc:
        log.info("could not title the DM thread %s: %s", thread.ts, slack_error(exc))
    await DmStatus(notifier).set(thread, status_line(Progress(), rehearsal=rehearsal))


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


__all__ = ["DmStatus", "StatusSink", "announce", "is_dm", "offer_prompts", "preset_names"]
