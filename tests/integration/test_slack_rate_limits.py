"""Slack's per-method rate limits, honoured: many debates streaming their plans at once against
the fake Slack enforcing Slack's documented tiers (tests/fakes/slack_tiers.py, every minute made
3 s long in the fake and in the bot alike) get a bounded number of 429s, not a storm, and every
debate's end lands exactly once, no stream left open. A 429 holds back every caller of its
method (bot/slack/limits.py); a plan is streamed only while the workspace has Tier-2 calls to
spare for its start and stop (bot/slack/stream_support.py)."""

from __future__ import annotations

from pathlib import Path

from bot.slack.limits import TIERS
from tests.fakes.openai_server import FakeOpenAI
from tests.support.slack_fixtures import slack_harness
from tests.support.stream_load import shrink_minutes, stream_many

DEBATES = 50
CHANNELS = 10
SCALE = 0.05   # a minute lasts 3 s


async def test_fifty_streaming_debates_stay_within_slacks_limits(tmp_path: Path) -> None:
    async with FakeOpenAI(latency=0.05) as openai, slack_harness(
            tmp_path, openai=openai, slack_streaming="auto", worker_concurrency=DEBATES,
            daily_budget_usd=100.0) as h:
        shrink_minutes(h, SCALE)
        load = await stream_many(h, debates=DEBATES, channels=CHANNELS,
                                 text="Should we adopt option --mode simple --rounds 1",
                                 scale=SCALE, timeout=240)
    assert len(load.debates) == DEBATES
    # every debate's result shown exactly once (by its stream's stop or as a message), and no
    # stream left streaming
    assert all(n == 1 for n in load.shown.values()), load.shown
    assert load.left_open == []
    # a 429 at most for each call in flight when its method was first refused (one a channel:
    # a channel's calls go one at a time), then none: never one per retry (slack_sdk's own
    # handler, each refused call retrying on its own, got 15-19 for chat.startStream here)
    for method, refused in load.refused.items():
        assert refused <= CHANNELS, (method, load.refused)
    for method, most in load.busiest_minute.items():
        if method in TIERS:   # what Slack let through never exceeded its limit
            assert most <= TIERS[method], (method, most)
    assert load.calls["chat.startStream"] >= 1 and load.calls["chat.appendStream"] >= 1
    # a stream costs a start and a stop (Tier 2): the debates past that budget were not
    # streamed but got the status message and their result as a message
    assert load.calls["chat.startStream"] < DEBATES and load.as_message
