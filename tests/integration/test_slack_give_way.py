"""While Slack requests are being answered (a `/debate` listener that has not acked yet), work
nobody is waiting on gives way (bot/slack/wiring.py): the running debates' group-committed
writes and the paced Slack posts wait until the answer is out (at most a second), then go.

The whole stack runs: the real Bolt app behind the service's aiohttp server, requests signed
for real, the real slack_sdk client against FakeSlack, SQLite and PostgreSQL. The command is held
before its ack where its estimate reads the learned reply sizes (their lock, taken by the test)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.slack.acks import MAX_QUIET_WAIT
from storage.caches import DbStepCache
from storage.outbox_rows import SlackStartRow
from tests.support.slack_fixtures import CHANNEL, Harness, harness_on
from tests.support.storage_fixtures import BACKENDS

TOPIC = "Should we move billing to PostgreSQL?"
BACKGROUND_POST = "a running debate's update"
#: how long the test looks for background work done while the command is held: under the
#: longest wait (quiet's timer starts after this one's, on the same loop, so it fires later)
LOOK = MAX_QUIET_WAIT / 2


async def _started(h: Harness) -> bool | None:
    """The command's start is written down: its listener is running, not acked yet."""
    async with h.rt.db.transaction(readonly=True) as session:
        found = await session.scalar(select(SlackStartRow.key).limit(1))
    return True if found is not None else None


def _posted(h: Harness) -> list[str]:
    return [str(m.get("text")) for m in h.fake.messages(CHANNEL)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_background_writes_and_posts_wait_until_the_command_is_answered(
        tmp_path: Path, backend: str) -> None:
    async with harness_on(backend, tmp_path) as h:
        cache = DbStepCache(h.rt.db, ttl_seconds=600)
        # the estimate shown in the ack waits on this lock (bot/service/calibration.py)
        sizes = h.rt.service.history._locks.setdefault("sizes", asyncio.Lock())
        await sizes.acquire()
        try:
            command = asyncio.ensure_future(h.command(f"{TOPIC} --mode simple --rounds 0"))
            await h.wait_until(lambda: _started(h), what="the command's start")
            wrote = asyncio.ensure_future(cache.put("give-way", {"written": True}))
            posted = asyncio.ensure_future(h.notifier.pacer.run(
                CHANNEL, lambda: h.notifier.client.chat_postMessage(channel=CHANNEL,
                                                                    text=BACKGROUND_POST)))
            done, _ = await asyncio.wait({wrote, posted, command}, timeout=LOOK)
            assert done == set()   # the write not committed, the post not sent, no answer yet
            assert BACKGROUND_POST not in _posted(h)
        finally:
            sizes.release()
        reply = await command
        assert reply.status == 200 and TOPIC.split()[0] in reply.text
        await asyncio.wait_for(asyncio.gather(wrote, posted), 10)
        assert await cache.get("give-way") == {"written": True}
        assert BACKGROUND_POST in _posted(h)

