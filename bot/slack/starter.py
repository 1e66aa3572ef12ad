"""Starting a debate from Slack: the visible message first, then the queued debate.

Order matters. We post the "Debate started" message (the thread root for `/debate`, a reply for
a mention or an appeal) *before* submitting, and submit only once it is up: a debate nobody can
see would spend budget for nothing, while a message whose submission fails is edited in place to
say why (over budget, bad preset). A bot outside the channel raises `NotInChannel` before
anything is queued, so the listener can say how to invite it.

A start with an idempotency key (every acknowledged command, mention, DM and shortcut) is written
down first (storage/starts.py): if the process dies before the submission, another process (or
this one, restarted) finishes it when its lease runs out (bot/slack/recovery.py), reusing the
"starting" message when it was posted and the same key, so nothing is started twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from slack_sdk.errors import SlackApiError

from bot.service.debates import DebateService, Submission
from bot.service.runtime import Runtime
from bot.service.tracing import tracing
from bot.service.worker import worker_name
from bot.slack.client import SLACK_ERRORS, error_code
from bot.slack.notifier import SlackNotifier, Thread
from bot.slack.views import notices
from bot.slack.views.debate import debate_started
from engine.domain import DebateRequest, Estimate, utcnow
from engine.errors import BudgetExceeded, InvalidRequest
from storage import slack as slack_store
from storage import starts
from storage.journal import urgent_journal_for
from storage.records import DebateRecord, DebateStatus, Origin

NOT_IN_CHANNEL = frozenset({"not_in_channel", "channel_not_found"})
PROVISIONAL_ID = "starting"
Submitter = Callable[[Origin], Awaitable[Submission]]
#: The least a written-down start is held by the process starting it before another may finish
#: it (at least three leases: posting waits its turn in the channel's pacing queue).
MIN_START_LEASE = 10.0


class Starts(Protocol):
    """What starting a debate from Slack needs: a listener's SlackContext, or the recovery's."""

    @property
    def rt(self) -> Runtime: ...

    @property
    def notifier(self) -> SlackNotifier: ...

    @property
    def service(self) -> DebateService: ...

    @property
    def rehearsal(self) -> bool: ...


def start_lease(rt: Runtime) -> float:
    return max(3 * rt.settings.lease_seconds, MIN_START_LEASE)


class NotInChannel(Exception):
    """The bot cannot post in the channel (not a member, or a private channel it cannot see)."""

    def __init__(self, channel_id: str, error: str) -> None:
        super().__init__(f"cannot post in {channel_id}: {error}")
        self.channel_id = channel_id
        self.error = error


@dataclass(frozen=True, slots=True)
class Place:
    """Where the debate is shown and who asked; `thread_ts` None opens a new thread."""

    channel_id: str
    user_id: str
    team_id: str | None = None
    thread_ts: str | None = None
    response_url: str | None = None

    def fields(self) -> dict[str, str | None]:
        """`dataclasses.asdict`, without its deep copy (on the path to `/debate`'s ack)."""
        return {name: getattr(self, name) for name in PLACE_FIELDS}


PLACE_FIELDS = tuple(Place.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class Started:
    """What happened: the submission (None when it was refused; the message says why)."""

    submission: Submission | None
    thread: Thread
    message_ts: str


@dataclass(frozen=True, slots=True)
class Opening:
    """A posted "starting" message, not yet submitted."""

    request: DebateRequest
    place: Place
    estimate: Estimate
    message_ts: str

    @property
    def thread(self) -> Thread:
        return Thread(self.place.channel_id, self.place.thread_ts or self.message_ts)


async def open_debate(ctx: Starts, request: DebateRequest, place: Place) -> Opening:
    """Estimate, then post the "starting" message where the debate will be shown.

    Raises InvalidRequest before posting anything, NotInChannel when the bot cannot post."""
    estimate = await ctx.service.estimate(request)
    provisional = DebateRecord(id=PROVISIONAL_ID, request=request, mode=estimate.mode,
                               preset=request.preset or "default", status=DebateStatus.QUEUED,
                               requested_by=request.requested_by)
    first = debate_started(provisional, estimate, "", rehearsal=ctx.rehearsal)
    try:
        ts = await ctx.notifier.post(place.channel_id, first, thread_ts=place.thread_ts)
    except SlackApiError as exc:
        error = error_code(exc)
        if error in NOT_IN_CHANNEL:
            raise NotInChannel(place.channel_id, error) from exc
        raise
    return Opening(request, place, estimate, ts)


async def submit_opening(ctx: Starts, opening: Opening, *, idempotency_key: str | None,
                         submit: Submitter | None = None) -> Started:
    """Submit the opened debate (through `submit` when the service operation is not a plain
    submission, e.g. a review's re-run); link the thread; show the record (or why it did not
    start)."""
    place, thread, ts = opening.place, opening.thread, opening.message_ts
    origin = Origin(surface="slack", team_id=place.team_id, channel_id=place.channel_id,
                    thread_ts=thread.ts, user_id=place.user_id, response_url=place.response_url)
    try:
        if submit is not None:
            sub = await submit(origin)
        else:
            sub = await ctx.service.submit(opening.request, origin=origin,
                                           idempotency_key=idempotency_key)
    except (BudgetExceeded, InvalidRequest) as exc:
        await ctx.notifier.update(place.channel_id, ts, notices.not_started(str(exc)))
        return Started(None, thread, ts)
    async with ctx.rt.db.transaction() as session:
        await slack_store.link_thread(session, channel_id=thread.channel_id, thread_ts=thread.ts,
                                      debate_id=sub.record.id)
    url = ctx.notifier.url(sub.record.id)
    started = debate_started(sub.record, sub.estimate, url, rehearsal=ctx.rehearsal)
    await ctx.notifier.update(place.channel_id, ts, started)
    if sub.cached:
        waits = sub.record.status is DebateStatus.AWAITING_REVIEW
        await ctx.notifier.post(thread.channel_id,
                                notices.cached(sub.record.id, awaiting_review=waits),
                                thread_ts=thread.ts)
        await ctx.notifier.post_summary(sub.record, thread)
    elif not sub.duplicate:
        ctx.rt.notify_workers()
    return Started(sub, thread, ts)


async def start_debate(ctx: Starts, request: DebateRequest, place: Place, *,
                       idempotency_key: str | None, submit: Submitter | None = None,
                       traced_as: str | None = None) -> Started:
    """`open_debate` then `submit_opening`; with `traced_as` ("dm", "mention"...), inside a
    `slack {traced_as}` span that starts the debate's trace (a caller without a span of its
    own: Bolt acked the event before it ran)."""
    if traced_as is None:
        if idempotency_key is not None and submit is None:
            return await _start_kept(ctx, request, place, idempotency_key)
        opening = await open_debate(ctx, request, place)
        return await submit_opening(ctx, opening, idempotency_key=idempotency_key,
                                    submit=submit)
    with tracing().span(f"slack {traced_as}", {"dialectic.surface": "slack",
                                               "dialectic.slack.action": traced_as},
                        kind="server"):
        return await start_debate(ctx, request, place, idempotency_key=idempotency_key,
                                  submit=submit)


async def keep_start(ctx: Starts, request: DebateRequest, place: Place, key: str
                     ) -> str | None:
    """Write the start down, held by a new owner (one group-committed INSERT: the starts of
    every request of the moment share a transaction); the owner, or None when it was written
    already (a repeated delivery, or another replica's). `/debate` does this before its ack, so
    an acknowledged start survives a SIGKILL (bot/slack/recovery.py finishes it)."""
    owner = worker_name()
    intent = starts.Intent(key, place.fields(), request.model_dump(mode="json"), owner,
                           utcnow(), start_lease(ctx.rt))
    kept: bool = await urgent_journal_for(ctx.rt.db).write(starts.intend_many, intent)
    return owner if kept else None


async def run_kept(ctx: Starts, request: DebateRequest, place: Place, key: str, owner: str
                   ) -> Started | None:
    """Start a debate `keep_start` wrote down for `owner`; None when it no longer holds it (it
    waited past its lease and another process is finishing it)."""
    lease = start_lease(ctx.rt)
    async with ctx.rt.db.transaction() as session:
        held = await starts.renew(session, key, owner=owner, now=utcnow(), lease_seconds=lease)
    if not held:
        return None
    try:
        opening = await open_debate(ctx, request, place)
    except (NotInChannel, InvalidRequest, *SLACK_ERRORS) as exc:   # the listener says why
        await _end(ctx, key, status=starts.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    async with ctx.rt.db.transaction() as session:
        await starts.opened(session, key, owner=owner, message_ts=opening.message_ts,
                            now=utcnow(), lease_seconds=lease)
    started = await submit_opening(ctx, opening, idempotency_key=key)
    await _end(ctx, key, status=starts.DONE,
               debate_id=started.submission.record.id if started.submission else None)
    return started


async def _start_kept(ctx: Starts, request: DebateRequest, place: Place, key: str) -> Started:
    """`start_debate` with the start written down first, and its message and end recorded: what
    a process that dies midway leaves for another to finish (storage/starts.py)."""
    owner = await keep_start(ctx, request, place, key)
    if owner is None:   # written down already: its idempotency key still starts it once
        opening = await open_debate(ctx, request, place)
        return await submit_opening(ctx, opening, idempotency_key=key)
    started = await run_kept(ctx, request, place, key, owner)
    if started is None:   # cannot happen within a lease of writing it; said, not hidden
        raise RuntimeError(f"the start {key} was taken by another process at once")
    return started


async def abandon_start(ctx: Starts, key: str, error: str) -> None:
    """End a start written down for a command that was not acknowledged as started (its estimate
    failed after the start was written): nobody may finish it."""
    await _end(ctx, key, status=starts.FAILED, error=error)


async def _end(ctx: Starts, key: str, *, status: starts.StartStatus, debate_id: str | None = None,
               error: str = "") -> None:
    async with ctx.rt.db.transaction() as session:
        await starts.ended(session, key, status=status, now=utcnow(), debate_id=debate_id,
                           error=error)


__all__ = ["MIN_START_LEASE", "NOT_IN_CHANNEL", "NotInChannel", "Opening", "Place", "Started",
           "Starts", "abandon_start", "keep_start", "open_debate", "run_kept", "start_debate",
           "start_lease", "submit_opening"]
