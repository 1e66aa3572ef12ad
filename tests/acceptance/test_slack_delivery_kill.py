"""`dialectic serve` killed (SIGKILL) while it posts a debate's result to Slack, then started
again: the result and the review request each reach Slack exactly once (issue 31).

FakeSlack carries the summary's chat.postMessage out at once and answers it 30 s later, so the
process dies after Slack posted and before it heard back: the worst moment. The restarted
process finds the post by the metadata it carries instead of posting it again, then sends the
review request the dead one never reached.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import FakeSlack
from tests.support.served_process import ServedProcess, serve_env

pytestmark = [pytest.mark.timeout(180)]

SECRET = "kill-test-secret"
CHANNEL = "CGENERAL"
REVIEW_CHANNEL = "CREVIEW"


def _summary(args: dict[str, Any]) -> bool:
    return "Debate result" in str(args.get("text", ""))


async def _command(server: ServedProcess, fake: FakeSlack, text: str) -> None:
    body = urlencode({"token": "legacy", "team_id": fake.team_id, "channel_id": CHANNEL,
                      "user_id": "UALICE", "command": "/debate", "text": text,
                      "api_app_id": "A0FAKE", "response_url": fake.response_url("r1"),
                      "trigger_id": "trigger.1"})
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(
                   timestamp=ts, body=body)}
    async with aiohttp.ClientSession() as s, \
            s.post(server.base + "/slack/events", data=body.encode(), headers=headers) as r:
        assert r.status == 200, await r.text()


async def _until(check: Any, what: str, timeout: float = 60.0) -> Any:
    async with asyncio.timeout(timeout):
        while True:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            await asyncio.sleep(0.1)
    raise AssertionError(what)   # pragma: no cover


def _results(fake: FakeSlack) -> list[dict[str, Any]]:
    return [m for m in fake.messages(CHANNEL) if _summary(m)]


async def test_a_result_being_posted_when_serve_is_killed_is_delivered_once(
        tmp_path: Path) -> None:
    config = tmp_path / "dialectic.toml"   # every result goes to a reviewer
    config.write_text('[presets.strict]\nmode = "consensus"\n'
                      'thresholds = { high = 1.0, tentative = 1.0, escalate = 0.0 }\n')
    async with FakeSlack() as fake, FakeOpenAI() as openai:
        env = serve_env(f"sqlite+aiosqlite:///{tmp_path}/d.db", openai.base_url,
                        DIALECTIC_CONFIG=str(config),
                        SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                        SLACK_API_URL=fake.base_url, DIALECTIC_REVIEW_CHANNEL=REVIEW_CHANNEL,
                        DIALECTIC_REVIEWERS="UREVIEWER", DIALECTIC_SLACK_STREAMING="off",
                        DIALECTIC_LEASE_SECONDS="2",
                        DIALECTIC_POLL_INTERVAL="0.1", DIALECTIC_SLACK_POST_INTERVAL="0.05",
                        DIALECTIC_PUBLIC_URL="http://dialectic.test")
        fake.slow("chat.postMessage", 30.0, times=1, when=_summary)
        first = ServedProcess(env, tmp_path / "serve-1.log")
        await first.start()
        try:
            await _command(first, fake, "Should we move billing to PostgreSQL? --preset strict")
            await _until(lambda: _results(fake), "the summary posted")
        finally:
            await first.kill()   # Slack has the summary; the process never heard back
        assert not fake.messages(REVIEW_CHANNEL)

        second = ServedProcess(env, tmp_path / "serve-2.log")
        await second.start()
        try:
            await _until(lambda: fake.messages(REVIEW_CHANNEL), "the review request")

            async def delivered() -> bool:
                _, health = await second.get("/healthz")
                return health["deliveries_pending"] == 0 and health["deliveries_failed"] == 0

            await _until(delivered, "every delivery done")
        finally:
            assert await second.terminate() == 0, second.log()
        assert len(_results(fake)) == 1, json.dumps(fake.messages(CHANNEL))[:2000]
        assert len(fake.messages(REVIEW_CHANNEL)) == 1
        assert "was posted before" in second.log()
