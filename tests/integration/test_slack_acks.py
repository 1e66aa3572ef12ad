"""The prompt ack (bot/slack/acks.py): a real Bolt AsyncApp, signed requests, the listener's ack
answered through `PromptRunner`, not Bolt's 10 ms polling, with Bolt's responses and errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlencode

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.slack.acks import Answering, PromptAck, PromptRunner, answer_promptly

SECRET = "acks-test-secret"


async def _authorize(**_: Any) -> AuthorizeResult:
    return AuthorizeResult(enterprise_id=None, team_id="T0ACK", bot_token="xoxb-acks",
                           bot_user_id="U0BOT", bot_id="B0BOT")


def _app(answering: Answering | None = None) -> AsyncApp:
    app = AsyncApp(signing_secret=SECRET, authorize=_authorize, name="acks-test")
    answer_promptly(app, answering)

    async def passes(next: Any) -> None:   # a global middleware, as ours: Bolt builds an ack
        await next()

    app.middleware(passes)
    return app


def _command(text: str) -> AsyncBoltRequest:
    body = urlencode({"token": "legacy", "team_id": "T0ACK", "channel_id": "C0ACK",
                      "user_id": "U0ACK", "command": "/debate", "text": text,
                      "api_app_id": "A0ACK", "trigger_id": "trigger.1",
                      "response_url": "http://127.0.0.1:9/response"})
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    return AsyncBoltRequest(body=body, headers={
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": stamp, "x-slack-signature": signature})


async def test_the_ack_is_answered_while_the_listener_still_works() -> None:
    app = _app()
    assert isinstance(app.listener_runner, PromptRunner)
    acks: list[AsyncAck] = []
    release, finished = asyncio.Event(), asyncio.Event()

    async def on_debate(ack: AsyncAck) -> None:
        acks.append(ack)
        await ack("Starting")
        await release.wait()   # work after the ack, not yet allowed to end
        finished.set()

    app.command("/debate")(on_debate)
    response = await app.async_dispatch(_command("topic"))
    assert (response.status, response.body) == (200, "Starting")
    assert isinstance(acks[0], PromptAck)   # the prompt path, not Bolt's polling one
    assert not finished.is_set()
    release.set()
    await asyncio.wait_for(finished.wait(), 5)


async def test_a_listener_that_fails_before_its_ack_answers_500_through_the_error_handler(
) -> None:
    app = _app()
    seen: list[Exception] = []

    async def on_error(error: Exception) -> None:
        seen.append(error)

    app.error(on_error)

    async def on_debate(ack: AsyncAck) -> None:
        raise RuntimeError("broken before the ack")

    app.command("/debate")(on_debate)
    response = await app.async_dispatch(_command("topic"))
    assert response.status == 500
    assert [str(e) for e in seen] == ["broken before the ack"]


async def test_a_listener_that_fails_after_its_ack_keeps_the_ack() -> None:
    app = _app()
    seen: list[Exception] = []

    async def on_error(error: Exception) -> None:
        seen.append(error)

    app.error(on_error)
    failed = asyncio.Event()

    async def on_debate(ack: AsyncAck) -> None:
        await ack("Acknowledged")
        await asyncio.sleep(0)
        failed.set()
        raise RuntimeError("broken after the ack")

    app.command("/debate")(on_debate)
    response = await app.async_dispatch(_command("topic"))
    assert (response.status, response.body) == (200, "Acknowledged")
    await asyncio.wait_for(failed.wait(), 5)
    for _ in range(500):   # the error handler runs in the listener's task, after the answer
        if seen:
            break
        await asyncio.sleep(0.01)
    assert [str(e) for e in seen] == ["broken after the ack"]


async def test_work_after_an_ack_waits_until_every_request_of_the_burst_is_answered() -> None:
    answering = Answering()
    app = _app(answering)
    order: list[str] = []

    async def on_debate(ack: AsyncAck, body: dict[str, Any]) -> None:
        await asyncio.sleep(0.01 * int(body["text"]))   # acked one after another
        await ack(f"Starting {body['text']}")
        await answering.quiet()
        order.append(f"after {body['text']}")

    app.command("/debate")(on_debate)

    async def dispatch(n: int) -> None:
        response = await app.async_dispatch(_command(str(n)))
        assert (response.status, response.body) == (200, f"Starting {n}")
        order.append(f"answered {n}")

    await asyncio.gather(*(dispatch(n) for n in range(5)))
    async with asyncio.timeout(5):
        while len(order) < 10:
            await asyncio.sleep(0.01)
    assert order[:5] == [f"answered {n}" for n in range(5)]   # no work after an ack before
    assert sorted(order[5:]) == [f"after {n}" for n in range(5)]
    assert answering.count == 0


async def test_quiet_gives_up_waiting_after_its_timeout() -> None:
    answering = Answering()
    answering.begin()   # a request that never ends
    async with asyncio.timeout(5):
        await answering.quiet(timeout=0.05)
    answering.end()
    await answering.quiet()   # none left: at once
