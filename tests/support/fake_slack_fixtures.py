"""The fake Slack on loopback and the real `slack_sdk` client pointed at it, for tests of the
fake's own methods (tests/integration/test_fake_slack_*.py), and the error a refused call names."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=slack.base_url)


async def refused(call: Awaitable[Any]) -> str:
    """The `error` Slack answers a call with (the call must fail)."""
    with pytest.raises(SlackApiError) as raised:
        await call
    return str(raised.value.response["error"])
