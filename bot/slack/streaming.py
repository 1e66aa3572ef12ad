"""The debate streamed as one plan message in its thread (chat.startStream, chat.appendStream,
chat.stopStream), and the fall back to the status message and phase replies where streaming is
unavailable.

`PlanSink` is the sink the notifier hands the service when streaming is on for the workspace
(`DIALECTIC_SLACK_STREAMING=auto`) and the debate has the recipient a channel stream needs (the
user who started it and their team). Like `ThreadSink` it never blocks the engine and never
raises into it: `emit` folds the event and marks the plan dirty; one flusher sends only the
chunks that changed (the plan's title with the running cost, the tasks whose state, details or
output moved), at most once per `update_gap`, through the channel's pacing queue. The stream
ends with the divergence summary's own blocks (`settle`).

When chat.startStream fails, the sink becomes a `ThreadSink` fed every event so far, so the
thread reads as it always did. An error that says the workspace has no streaming (`unknown_method`,
`not_allowed`, `feature_not_enabled`, ...) is remembered for the team in the database (table
`slack_workspaces`, with when it was learnt), logged once; the next debates there, in any process
and after a restart, go straight to the status message, and streaming is tried again a day later
(`RETRY_STREAMING`).

A stream costs two Tier-2 calls (its start and its stop): a debate is streamed only while the
workspace has them to spare, and one that finished before its stream started gets none
(`stream_affordable`); both get the status message instead, as above.

A stream lost midway (an append refused for good, or `LOST_AFTER` appends in a row refused) falls
back the same way; the lost stream is first stopped with a line saying the debate continues below
as a status message, when Slack still allows it, else it is left as it is and that is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.service.progress import progress_for
from bot.slack.client import SLACK_ERRORS, error_code, slack_error
from bot.slack.notifier import SETTLE_TIMEOUT, Settled, SlackNotifier, ThreadSink, thread_of
from bot.slack.stream_support import (
    RETRY_STREAMING,
    UNAVAILABLE,
    StreamingMode,
    StreamSupport,
    stream_affordable,
)
from bot.slack.views import plan as views
from bot.slack.views.common import Message
from engine.core.planning import prepare
from engine.domain import DebateRequest, Event, EventKind
from engine.errors import DialecticError
from engine.ports import EventSink
from engine.settings import EngineSettings
from storage import debates
from storage.records import DebateRecord

log = logging.getLogger("dialectic.slack")

#: chat.appendStream / chat.stopStream errors after which the stream takes nothing more.
GONE = frozenset({"message_not_in_streaming_state", "message_not_found", "channel_not_found",
                  "is_archived"})
WHYS = {EventKind.STEP_REFUSED: "refused", EventKind.STEP_DEGRADED: "degraded",
        EventKind.STEP_FILTERED: "filtered"}
#: Appends refused in a row (for any reason) after which a stream is taken as lost.
LOST_AFTER = 3


def planned_calls(settings: EngineSettings, request: DebateRequest) -> dict[str, int]:
    """How many calls the debate's plan makes in each phase (how many judges judge)."""
    try:
        plan = prepare(settings, request).plan
    except DialecticError:
        return {}
    return dict(Counter(call.phase for call in plan.calls))


class PlanSink:
    """One debate run streamed as a plan. `emit` only folds and marks dirty."""

    def __init__(self, notifier: StreamingNotifier, record: DebateRecord) -> None:
        self.n = notifier
        self.record = record
        origin = record.origin
        self.channel = origin.channel_id or ""
        self.thread_ts = origin.thread_ts or ""
        self.stream_ts = origin.stream_ts
        engine = notifier.rt.engine
        self.progress = progress_for(engine, record.request)
        self.planned = planned_calls(engine, record.request)
        self.rehearsal = engine.is_rehearsal
        self.notes: dict[str, views.PhaseNotes] = {}
        self.events: list[Event] = []
        self.shown: list[dict[str, Any]] = []
        self.title_shown = ""
        self.fallback: ThreadSink | None = None
        self.refused_appends = 0
        self.closed = False
        self._dirty = False
        self._falling = False
        self._flusher: asyncio.Task[None] | None = None

    # --- folding ---

    async def emit(self, event: Event) -> None:
        if self.fallback is not None:
            await self.fallback.emit(event)
            return
        try:
            self._handle(event)
        except Exception:  # a notifier bug must never stop or fail a debate
            log.exception("Slack plan stream failed on %s for debate %s", event.kind,
                          self.record.id)

    def _handle(self, event: Event) -> None:
        if self.fold(event):
            self._touch()

    def fold(self, event: Event) -> bool:
        """Take in an event without sending anything; True when what the plan shows changed
        (a sink rebuilt from stored events folds them all, then settles)."""
        self.events.append(event)
        self.rehearsal = self.rehearsal or event.rehearsal
        noted = self._note(event)
        return self.progress.apply_event(event) or noted

    def close(self) -> None:
        """The debate finished: no more appends; its delivery stops the stream (`settle`)."""
        self.closed = True

    def _note(self, event: Event) -> bool:
        data = event.data
        if event.kind is EventKind.PHASE_FINISHED:
            notes = self._phase(str(data.get("phase") or ""))
            notes.highlights = {str(k): str(v) for k, v in (data.get("highlights") or {}).items()}
            return True
        if event.kind in WHYS:
            notes = self._phase(str(data.get("phase") or self.progress.current))
            line = views.why_line(WHYS[event.kind], str(data.get("key") or "?"),
                                  str(data.get("reason") or ""))
            if line not in notes.why:
                notes.why.append(line)
            return True
        if event.kind is EventKind.JUDGE_SCORED:
            winner = data.get("winner")
            self._phase(self.progress.current).judges.append(
                (str(data.get("judge") or "judge"), str(winner) if winner else None))
            return True
        return False

    def _phase(self, name: str) -> views.PhaseNotes:
        return self.notes.setdefault(name, views.PhaseNotes())

    # --- sending ---

    def _touch(self) -> None:
        self._dirty = True
        if self._flusher is None or self._flusher.done():
            self._flusher = self.n.spawn(self._flush())

    def _chunks(self, final: DebateRecord | None = None) -> tuple[str, list[dict[str, Any]]]:
        title = views.plan_title(self.progress, rehearsal=self.rehearsal, record=final)
        return title, views.task_chunks(self.progress, self.notes, self.planned)

    async def _flush(self) -> None:
        """Coalesced: only the latest state is sent, at most once per update_gap."""
        while self._dirty and self.fallback is None and not self.closed:
            self._dirty = False
            if self.stream_ts is None:
                if not await self._started():
                    return
            else:
                await self._append(*self._chunks())
            if self._dirty:
                await asyncio.sleep(self.n.update_gap)

    async def _started(self) -> bool:
        """Start the stream through the channel's queue (its state as it is then); False when
        it could not be (the sink has fallen back)."""
        if await self.n.streaming.refused_lately(self.record.origin.team_id):
            await self._fall_back()
            return False
        return await self.n.pacer.run(self.channel, lambda: self._start(*self._chunks()))

    async def _slack(self) -> AsyncWebClient:
        return await self.n.client_for(self.record)

    async def _start(self, title: str, tasks: list[dict[str, Any]]) -> bool:
        """chat.startStream with the whole plan; on failure, or when the workspace's Tier-2
        budget for streams is spent (bot/slack/stream_support.py), the thread gets the status
        message."""
        origin = self.record.origin
        if self.record.finished_at is not None or not stream_affordable(await self._slack()):
            log.debug("Slack: debate %s is not streamed (finished, or chat.startStream/"
                      "stopStream at their limit): status message instead", self.record.id)
            await self._fall_back()
            return False
        opening = views.opening_text(rehearsal=self.rehearsal)
        chunks = ([views.text_chunk(opening)] if opening else []) + [views.plan_chunk(title),
                                                                      *tasks]
        try:
            reply = await (await self._slack()).chat_startStream(
                channel=self.channel, thread_ts=self.thread_ts, task_display_mode="plan",
                recipient_team_id=origin.team_id, recipient_user_id=origin.user_id,
                chunks=chunks)
        except SLACK_ERRORS as exc:
            await self.n.streaming.refused(origin.team_id, error_code(exc))
            log.info("Slack: debate %s is not streamed (%s): status message instead",
                     self.record.id, slack_error(exc))
            await self._fall_back()
            return False
        await self.n.streaming.streamed(origin.team_id)
        self.stream_ts = str(reply["ts"])
        self.title_shown, self.shown = title, tasks
        updated = self.record.origin.model_copy(update={"stream_ts": self.stream_ts})
        async with self.n.rt.db.transaction() as session:
            await debates.update_origin(session, self.record.id, updated)
        for hook in self.n.stream_started:
            hook(self.record.id)
        return True

    async def _append(self, title: str, tasks: list[dict[str, Any]]) -> None:
        chunks = self._delta(title, tasks)
        if not chunks or self.stream_ts is None:
            return
        ts = self.stream_ts

        async def call() -> None:
            await (await self._slack()).chat_appendStream(channel=self.channel, ts=ts,
                                                          chunks=chunks)

        try:
            await self.n.pacer.run(self.channel, call)
        except SLACK_ERRORS as exc:
            self.refused_appends += 1
            log.warning("Slack: could not append to the plan of %s: %s", self.record.id,
                        slack_error(exc))
            if self.closed:   # finished meanwhile: its delivery ends the stream
                return
            if error_code(exc) in GONE or self.refused_appends >= LOST_AFTER:
                await self._fall_back(lost=ts)
            return
        self.refused_appends = 0
        self.title_shown, self.shown = title, tasks

    def _delta(self, title: str, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        head = [views.plan_chunk(title)] if title != self.title_shown else []
        return head + views.changed(self.shown, tasks)

    async def _fall_back(self, *, lost: str | None = None) -> None:
        """From now on a ThreadSink: it is fed every event so far and posts the status message;
        a `lost` stream is first stopped with a line saying so, when Slack still allows it."""
        if self.fallback is not None or self._falling:
            return
        self._falling = True
        self.stream_ts = None
        if lost is not None:
            await self._leave(lost)
        record = self.record.model_copy(update={"origin": self.record.origin.model_copy(
            update={"stream_ts": None})})
        self.fallback = ThreadSink(self.n, record)
        for event in self.events:
            await self.fallback.emit(event)
        self.events.clear()

    async def _leave(self, ts: str) -> None:
        """Stop the lost stream with a line pointing below; when Slack refuses (the stream is
        gone for good), it stays as it was, and that is logged."""
        async def call() -> None:
            await (await self._slack()).chat_stopStream(channel=self.channel, ts=ts,
                                                chunks=[views.text_chunk(views.CONTINUED)])

        try:
            await self.n.pacer.run(self.channel, call)
        except SLACK_ERRORS as exc:
            log.warning("Slack: the lost plan of %s could not be stopped (%s): it stays above "
                        "the status message", self.record.id, slack_error(exc))

    # --- the end ---

    async def settle(self, record: DebateRecord, summary: Message | None, *,
                     retrying: bool = False) -> Settled:
        """End the stream: final states and title, the summary's blocks at the bottom; `carried`
        when the summary went out with it (else the caller posts it as a message). `retrying`:
        an earlier attempt sent the stop and its answer was lost, so a stream found stopped was
        stopped by it, summary and all."""
        self.record = record
        self.rehearsal = self.rehearsal or bool(record.result and record.result.rehearsal)
        running = self._flusher
        if running is not None and not running.done():
            self.closed = self.stream_ts is not None  # only coalesced appends left: stop wins
            if self.closed:
                running.cancel()
            await asyncio.wait({running}, timeout=SETTLE_TIMEOUT)
        if self.stream_ts is None:   # finished before its stream started: none is started
            await self._fall_back()
        self.closed = True
        if self.fallback is not None:
            await self.fallback.settle(record)
        if self.fallback is not None or self.stream_ts is None:
            return Settled(carried=False)
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(self._stop(record, summary), SETTLE_TIMEOUT)
            if code == "":
                return Settled(carried=summary is not None)
            return Settled(carried=retrying and summary is not None and code in GONE)
        return Settled(carried=False)

    async def _stop(self, record: DebateRecord, summary: Message | None) -> str:
        """Stop the stream with the summary; "" when it went out with it, else Slack's error
        (the stream is then stopped without it where Slack still allows)."""
        title, tasks = self._chunks(final=record)
        tasks = views.ended(tasks, record)
        ending = views.ending_text(record, with_result=summary is not None)
        chunks = [*self._delta(title, tasks), views.text_chunk(ending)]
        ts = self.stream_ts or ""

        async def call(blocks: list[dict[str, Any]] | None) -> None:
            await (await self._slack()).chat_stopStream(channel=self.channel, ts=ts, chunks=chunks,
                                                blocks=blocks)

        try:
            await self.n.pacer.run(self.channel, lambda: call(summary.blocks if summary
                                                              else None))
            return ""
        except SLACK_ERRORS as exc:
            log.warning("Slack: could not end the plan of %s with its result: %s",
                        record.id, slack_error(exc))
            code = error_code(exc) or type(exc).__name__
        if summary is None or code in GONE:
            return code
        with contextlib.suppress(*SLACK_ERRORS):   # the stream ends; the summary is posted
            await self.n.pacer.run(self.channel, lambda: call(None))
        return code


class StreamingNotifier(SlackNotifier):
    """The notifier that streams a debate's plan where it can, else posts as before."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.streaming = StreamSupport(self.settings.slack_streaming, self.rt.db)

    def posts_phase_replies(self, debate_id: str) -> bool:
        """False while the debate's plan streams (no phase replies: nothing clears a status)."""
        sink = self.live.get(debate_id)
        return not isinstance(sink, PlanSink) or sink.fallback is not None

    def sink_for(self, record: DebateRecord) -> EventSink | None:
        if not record.id or thread_of(record) is None or not self.streaming.usable(record):
            return super().sink_for(record)
        sink = PlanSink(self, record)
        self.live[record.id] = sink
        return sink

    def replayed(self, record: DebateRecord, events: list[Event]) -> EventSink | None:
        if not record.origin.stream_ts or thread_of(record) is None:
            return super().replayed(record, events)
        sink = PlanSink(self, record)   # it streamed in another process, or before a restart
        for event in events:
            sink.fold(event)
        sink.closed = True
        return sink

    async def settle_thread(self, record: DebateRecord, events: list[Event] | None = None, *,
                            retrying: bool = False) -> Settled:
        sink = self.ended.get(record.id)
        if sink is None:
            sink = self.replayed(record, events or [])
        if not isinstance(sink, PlanSink):
            return await super().settle_thread(record, events, retrying=retrying)
        self.ended.pop(record.id, None)
        return await sink.settle(record, self.summary_message(record), retrying=retrying)


__all__ = ["GONE", "LOST_AFTER", "RETRY_STREAMING", "UNAVAILABLE", "PlanSink", "StreamSupport",
           "StreamingMode", "StreamingNotifier", "planned_calls"]
