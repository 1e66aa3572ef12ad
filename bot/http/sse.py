"""`GET /api/debates/{id}/events`: the debate's audit chain as Server-Sent Events, live until the
debate settles, resumable with `Last-Event-ID` (or `?after=`).

A resume position is a whole number from 0 to storage's MAX_SEQ; anything else (a word, a
negative or a huge number) in either place is a 400 saying so, before any SQL. Streams are
capped per client and in all (streams.py: 429 with Retry-After past the cap); a quiet stream
sends a comment line every `sse_heartbeat_seconds`, and every stream ends after
`sse_max_seconds`, without `settled`, so the browser's EventSource reconnects and resumes.

A client that goes away is normal (a closed tab): the stream stops polling at once and says so at
DEBUG, never as an error. If the database goes away mid-stream, the stream ends; the client's
EventSource reconnects after `retry` with its Last-Event-ID and resumes where it stopped."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Annotated

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from bot.http import scoping
from bot.http.state import HTTP_SETTINGS, RUNTIME
from bot.http.streams import STREAM_LIMITS, TooManyStreams, client_of, refusal
from bot.service.runtime import Runtime
from bot.service.telemetry import STREAMS
from engine.errors import InvalidRequest, validation_message
from storage import audit
from storage.errors import DATABASE_ERRORS
from storage.records import TERMINAL_STATUSES, DebateStatus

log = logging.getLogger("dialectic.http")

STREAM_POLL = 0.25      # seconds between reads of the chain
SEQ = Annotated[int, Field(ge=0, le=audit.MAX_SEQ)]
EVENT_SEQ: TypeAdapter[int] = TypeAdapter(SEQ)


class EventsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    after: SEQ = Field(default=0, description="resume after this event's seq, 0 to "
                                              f"{audit.MAX_SEQ} (the Last-Event-ID header wins)")
    sig: str = Field(default="", description="a transcript link's signature, instead of a token")
    exp: str = Field(default="", description="when that transcript link expires (Unix seconds)")


async def stream_events(request: web.Request, query: EventsQuery) -> web.StreamResponse:
    """Each audit event as `id: <seq>`, `event: <kind>`, `data: <json>`; once the debate is
    finished or waits for a reviewer, a last `event: settled` (no id) and the stream ends, so a
    client knows not to reconnect."""
    rt = request.app[RUNTIME]
    debate_id = request.match_info["id"]
    await scoping.debate(request, debate_id)  # 404 before the stream starts (or not this
    # sign-in's workspace's: the same answer)
    after = _resume_after(request, query)
    try:
        with request.app[STREAM_LIMITS].slot(client_of(request)):
            return await _stream(request, rt, debate_id, after)
    except TooManyStreams as exc:
        return refusal(exc)


async def _stream(request: web.Request, rt: Runtime, debate_id: str, after: int
                  ) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    lifetime = request.app[HTTP_SETTINGS].sse_max_seconds
    with STREAMS.track_inprogress():
        try:
            await resp.write(b"retry: 2000\n\n")
            async with asyncio.timeout(lifetime):
                await _follow(request, resp, rt, debate_id, after)
        except TimeoutError:  # its lifetime is over: the client reconnects where it stopped
            log.debug("events of %s: the stream reached its %.0f s lifetime", debate_id,
                      lifetime)
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError: the client left
            log.debug("events of %s: the client went away", debate_id)
        except DATABASE_ERRORS as exc:  # the client reconnects with its Last-Event-ID
            log.warning("events of %s: ending the stream: %s", debate_id, exc)
    return resp  # aiohttp ends it (write_eof), minding a client that has gone


async def _follow(request: web.Request, resp: web.StreamResponse, rt: Runtime, debate_id: str,
                  after: int) -> None:
    """Write events as they are appended until the debate settles or the client leaves."""
    heartbeat = request.app[HTTP_SETTINGS].sse_heartbeat_seconds
    idle = 0.0
    while not _gone(request):
        async with rt.db.transaction(readonly=True) as session:
            events = await audit.events(session, debate_id, after_seq=after)
        for ev in events:
            after = ev.seq
            payload = json.dumps({"seq": ev.seq, "kind": ev.kind, "actor": ev.actor,
                                  "at": ev.at.isoformat(), "data": ev.data}, default=str)
            await resp.write(f"id: {ev.seq}\nevent: {ev.kind}\ndata: {payload}\n\n".encode())
        if not events and (status := await _settled(rt, debate_id)) is not None:
            settled = json.dumps({"kind": "settled", "status": status.value, "after": after})
            await resp.write(f"event: settled\ndata: {settled}\n\n".encode())
            return
        idle = 0.0 if events else idle + STREAM_POLL
        if idle >= heartbeat:
            await resp.write(b": keep-alive\n\n")
            idle = 0.0
        await asyncio.sleep(STREAM_POLL)
    log.debug("events of %s: the client went away", debate_id)


def _gone(request: web.Request) -> bool:
    """The client closed the connection (nothing would read what we write)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def _resume_after(request: web.Request, query: EventsQuery) -> int:
    header = request.headers.get("Last-Event-ID")
    if header is None:
        return query.after
    try:
        return EVENT_SEQ.validate_python(header or "0")
    except ValidationError as exc:
        raise InvalidRequest(validation_message(exc, prefix="Last-Event-ID")) from None


async def _settled(rt: Runtime, debate_id: str) -> DebateStatus | None:
    """The debate's status once it is settled (finished or waiting for a reviewer)."""
    record = await rt.service.get(debate_id)
    settled = record.status in TERMINAL_STATUSES or record.status is DebateStatus.AWAITING_REVIEW
    return record.status if settled else None
