"""Many debates streaming their plans at once against the fake Slack enforcing Slack's documented
rate limits (tests/fakes/slack_tiers.py): what the rate-limit test asserts and the Slack bench
prints. Started with signed `/debate` commands over a few channels; measured from the fake's
record of every call (accepted and refused) and the debates' own records."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from bot.slack.limits import paced_limits
from storage.records import DebateRecord
from tests.fakes.slack_tiers import MINUTE
from tests.support.slack_fixtures import Harness

STREAM_METHODS = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream",
                  "chat.stopStream")


@dataclass(slots=True)
class StreamLoad:
    """What happened: calls answered and 429s by method, the busiest (scaled) minute of each,
    and for each debate whether its end landed and how long after it finished."""

    debates: list[DebateRecord]
    calls: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    busiest_minute: dict[str, int] = field(default_factory=dict)
    landed: dict[str, bool] = field(default_factory=dict)
    late: dict[str, float] = field(default_factory=dict)   # seconds from finish to its end shown
    as_message: set[str] = field(default_factory=set)   # ended with the result as a message
    left_open: list[str] = field(default_factory=list)   # streams started and never stopped
    bot_saw_429: Counter[str] = field(default_factory=Counter)
    wall: float = 0.0


def shrink_minutes(h: Harness, scale: float) -> None:
    """Slack's limits with every window `scale` times as long, in the fake and in the bot."""
    h.fake.enforce_tiers(scale=scale)
    limits = paced_limits(h.notifier.client)
    assert limits is not None, "the client has no shared 429 handler"
    limits.window = MINUTE * scale


async def stream_many(h: Harness, *, debates: int, channels: int, text: str,
                      scale: float, timeout: float) -> StreamLoad:
    """Start `debates` debates at once over `channels` channels; wait until every one finished
    and everything owed to Slack was delivered; measure."""
    started = asyncio.get_running_loop().time()
    await asyncio.gather(*(h.command(f"{text} (case {i})", channel=f"CSTREAM{i % channels}")
                           for i in range(debates)))

    async def all_finished() -> list[DebateRecord] | None:
        found = await h.rt.service.recent(limit=debates * 2)
        done = [d for d in found if d.finished_at is not None]
        return done if len(done) >= debates else None

    records = await h.wait_until(all_finished, timeout=timeout, what="every debate to finish")
    await h.delivered(timeout=timeout)
    await h.notifier.drain()
    records = [await h.rt.service.get(r.id) for r in records]   # the streams' ts, as started
    load = StreamLoad(records, wall=asyncio.get_running_loop().time() - started)
    _count(h, load, scale)
    limits = paced_limits(h.notifier.client)
    load.bot_saw_429 = Counter(limits.received) if limits is not None else Counter()
    return load


def _count(h: Harness, load: StreamLoad, scale: float) -> None:
    accepted: dict[str, list[float]] = defaultdict(list)
    for call in h.fake.calls:
        if call.method not in STREAM_METHODS:
            continue
        if call.status == 429:
            load.refused[call.method] += 1
        else:
            load.calls[call.method] += 1
            accepted[call.method].append(call.at)
    for method, times in accepted.items():
        load.busiest_minute[method] = _busiest(sorted(times), MINUTE * scale)
    stops = {c.args.get("ts"): c for c in h.fake.calls
             if c.method == "chat.stopStream" and c.status == 200 and c.ok}
    started = [str(c.response.get("ts")) for c in h.fake.calls
               if c.method == "chat.startStream" and c.status == 200 and c.ok]
    load.left_open = [ts for ts in started if ts not in stops]
    for record in load.debates:
        stream_ts = record.origin.stream_ts
        stop = stops.get(stream_ts) if stream_ts else None
        summary = _summary_posted(h, record)
        load.landed[record.id] = stop is not None or summary is not None
        if summary is not None:   # the result shows when it is posted, whatever the stream did
            load.as_message.add(record.id)
        shown = summary if summary is not None else stop.at if stop is not None else None
        if shown is not None and record.finished_at is not None:
            load.late[record.id] = max(0.0, shown - record.finished_at.timestamp())


def _summary_posted(h: Harness, record: DebateRecord) -> float | None:
    """When the debate's result was posted in its thread as a message (a stream that could not
    carry it, or a debate that fell back to the status message)."""
    origin = record.origin
    for call in h.fake.calls:
        if (call.method == "chat.postMessage" and call.ok
                and call.args.get("channel") == origin.channel_id
                and call.args.get("thread_ts") == origin.thread_ts
                and record.id in str(call.args)):
            return call.at
    return None


def _busiest(times: list[float], window: float) -> int:
    most, first = 0, 0
    for last, at in enumerate(times):
        while times[first] <= at - window:
            first += 1
        most = max(most, last - first + 1)
    return most


__all__ = ["STREAM_METHODS", "StreamLoad", "shrink_minutes", "stream_many"]
