"""Many debates streaming their plans at once against the fake Slack enforcing Slack's documented
rate limits (tests/fakes/slack_tiers.py): what the rate-limit test asserts and the Slack bench
prints. Started with signed `/debate` commands over a few channels; measured from the fake's
record of every call (accepted and refused) and the debates' own records. A debate's end is the
first call that showed its result (the stream's stop carrying it, or the result posted as a
message)."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from bot.slack.limits import paced_limits
from bot.slack.views.feedback import feedback_value
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
    shown: dict[str, int] = field(default_factory=dict)   # times each debate's result was shown
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
    stopped = {c.args.get("ts") for c in h.fake.calls
               if c.method == "chat.stopStream" and c.status == 200 and c.ok}
    started = [str(c.response.get("ts")) for c in h.fake.calls
               if c.method == "chat.startStream" and c.status == 200 and c.ok]
    load.left_open = [ts for ts in started if ts not in stopped]
    for record in load.debates:
        shown = _results_shown(h, record)
        load.shown[record.id] = len(shown)
        load.landed[record.id] = bool(shown)
        if any(method == "chat.postMessage" for _, method in shown):
            load.as_message.add(record.id)
        if shown and record.finished_at is not None:
            load.late[record.id] = max(0.0, shown[0][0] - record.finished_at.timestamp())


def _results_shown(h: Harness, record: DebateRecord) -> list[tuple[float, str]]:
    """When and how the debate's result reached its thread: the calls Slack accepted that carry
    it (its feedback buttons, which only the result has), a stream's stop or a message."""
    origin, marker = record.origin, feedback_value("up", record.id)
    return sorted((call.at, call.method) for call in h.fake.calls
                  if call.ok and call.status == 200 and marker in str(call.args)
                  and ((call.method == "chat.postMessage"
                        and call.args.get("channel") == origin.channel_id
                        and call.args.get("thread_ts") == origin.thread_ts)
                       or (call.method == "chat.stopStream"
                           and call.args.get("channel") == origin.channel_id)))


def _busiest(times: list[float], window: float) -> int:
    most, first = 0, 0
    for last, at in enumerate(times):
        while times[first] <= at - window:
            first += 1
        most = max(most, last - first + 1)
    return most


__all__ = ["STREAM_METHODS", "StreamLoad", "shrink_minutes", "stream_many"]
