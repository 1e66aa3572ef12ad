"""What a failed Slack call is called in logs, the Deliveries page and /healthz: Slack's own code
when it answered, and what happened when it did not (not a bare exception class name)."""

from __future__ import annotations

from aiohttp import ClientConnectionError

from bot.slack.client import error_code, slack_error


def test_a_call_slack_never_answered_says_what_happened() -> None:
    exc = ClientConnectionError("Cannot connect to host 127.0.0.1:1")
    assert error_code(exc) == "ClientConnectionError"
    assert slack_error(exc) == ("could not reach Slack (ClientConnectionError: Cannot connect "
                                "to host 127.0.0.1:1)")
    assert slack_error(TimeoutError()) == "could not reach Slack (TimeoutError)"
