"""50 debates streaming their plans at once against the fake Slack enforcing Slack's documented
per-method limits (tests/fakes/slack_tiers.py), through the real Bolt app, worker and notifier
(tests/support/stream_load.py): calls and 429s per method, the busiest minute of each, how late
each debate's end lands after it finished. Twice: with slack_sdk's own 429 handler (each refused
call sleeps its Retry-After and retries on its own: what the bot did before) and with the
shared one (bot/slack/limits.py). `BENCH_SLACK_STREAM_SCALE` (0.25 by default: a minute lasts
15 s, in the fake and the bot alike; 1 is Slack's real minute) keeps it short; the limits
themselves are Slack's. `BENCH_SLACK_STREAM_STOCK=0` leaves out the run with slack_sdk's
handler. Prints figures; asserts nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler

from bot.slack.limits import TIERS, paced_limits
from tests.benchmarks.slack_bench import percentile
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_tiers import MINUTE
from tests.support.slack_fixtures import Harness, slack_harness
from tests.support.stream_load import STREAM_METHODS, StreamLoad, shrink_minutes, stream_many

DEBATES = 50
CHANNELS = 10
SCALE = float(os.environ.get("BENCH_SLACK_STREAM_SCALE", "0.25"))
TIMEOUT = 900.0
STOCK = os.environ.get("BENCH_SLACK_STREAM_STOCK", "1") != "0"


def _stock(h: Harness) -> None:
    """slack_sdk's own handler, as the bot had it: each refused call retries on its own."""
    h.fake.enforce_tiers(scale=SCALE)
    client = h.notifier.client
    client.retry_handlers[:] = [r for r in client.retry_handlers if paced_limits(client) is not r]
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=3))


async def one(stock: bool) -> StreamLoad:
    with tempfile.TemporaryDirectory(prefix="bench-stream.") as tmp:
        async with FakeOpenAI(latency=0.2) as openai, slack_harness(
                Path(tmp), openai=openai, slack_streaming="auto", worker_concurrency=DEBATES,
                daily_budget_usd=100.0, slack_post_interval=SCALE) as h:
            if stock:
                _stock(h)
            else:
                shrink_minutes(h, SCALE)
            return await stream_many(h, debates=DEBATES, channels=CHANNELS,
                                     text="Should we adopt option --mode simple --rounds 1",
                                     scale=SCALE, timeout=TIMEOUT)


def _print(name: str, load: StreamLoad) -> None:
    late = sorted(load.late.values()) or [float("nan")]
    landed = sum(load.landed.values())
    print(f"  {name}: {len(load.debates)} debates in {load.wall:.1f} s; ends landed "
          f"{landed}/{len(load.debates)}, after finishing p50 {percentile(late, .5):.1f} s, "
          f"p90 {percentile(late, .9):.1f} s, max {late[-1]:.1f} s; "
          f"{len(load.as_message)} ended with the result as a message; streams started "
          f"{load.calls['chat.startStream']}, left open {len(load.left_open)}; "
          f"429s {sum(load.refused.values())}", flush=True)
    for method in STREAM_METHODS:
        limit = TIERS.get(method)
        print(f"    {method:18} {load.calls[method]:4} answered, {load.refused[method]:3} 429s, "
              f"busiest minute {load.busiest_minute.get(method, 0):3}"
              f"{f' (limit {limit})' if limit else ' (1 a second per channel)'}", flush=True)


async def run() -> None:
    print(f"\nSlack streaming: {DEBATES} debates at once over {CHANNELS} channels, plans "
          f"streamed, against the fake Slack enforcing Slack's limits (a minute lasts "
          f"{MINUTE * SCALE:.0f} s; figures per such minute):", flush=True)
    if STOCK:
        _print("before (slack_sdk's 429 handler)", await one(stock=True))
    _print("after (429s shared per method)  ", await one(stock=False))
