"""SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are the console's "Sign in with Slack" settings, and
slack_bolt's AsyncApp also reads them from the environment: set, they would switch Bolt to its
OAuth installation flow (a file installation store that knows no workspace), and every request
would be answered "Please install this app" instead of with the bot token. With both variables
set in the environment as an operator sets them, the app still answers /debate with its token."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.slack_fixtures import CHANNEL, slack_harness

pytestmark = pytest.mark.integration   # the whole Slack stack on loopback

CLIENT_ID = "1234567890.0987654321"
CLIENT_SECRET = "client-secret-for-sign-in"


async def test_sign_in_variables_leave_the_bot_token_path_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SLACK_CLIENT_SECRET", CLIENT_SECRET)
    monkeypatch.setenv("HOME", str(tmp_path))   # where Bolt's file installation store would live
    async with slack_harness(tmp_path) as h:
        assert h.rt.sign_in is not None     # Sign in with Slack is on: same variables
        reply = await h.command("Should we move billing to PostgreSQL?")
        assert reply.status == 200, reply.text
        assert "Estimate" in reply.json()["text"], reply.text
        assert "install" not in reply.text.lower()
        debate = await h.one_debate()
        await h.wait_finished(debate.id)
        root = h.fake.messages(CHANNEL)[0]
        assert "Debate started" in root["text"]
        await h.wait_reply(CHANNEL, root["ts"], "[Rehearsal] Debate result")
        # the bot token was used for Slack's Web API; no installation was looked for on disk
        assert h.fake.calls_to("chat.postMessage")
        assert not (tmp_path / ".bolt-app-installation").exists()


async def test_a_second_request_reuses_the_workspace_identity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot's identity (auth.test) is asked once, not once per request."""
    monkeypatch.setenv("SLACK_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SLACK_CLIENT_SECRET", CLIENT_SECRET)
    async with slack_harness(tmp_path, workers=0) as h:
        for topic in ("Should we adopt Kafka?", "Should we adopt NATS?"):
            reply = await h.command(topic)
            assert reply.status == 200 and "Estimate" in reply.json()["text"], reply.text
        assert len(h.fake.calls_to("auth.test")) == 1
