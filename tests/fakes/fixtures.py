"""Pytest fixtures around the fake OpenAI server; `tests/conftest.py` imports them.

from tests.fakes.fixtures import fake_openai, gateway_settings  # in conftest.py
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine.settings import EngineSettings
from engine.untrusted.spotlight import regions
from tests.fakes.openai_server import FakeOpenAI

TEST_API_KEY = "test-key"
#: the model every role uses unless told otherwise (a test that prices it names it so)
DEFAULT_MODEL = EngineSettings.model_fields["default_model"].default


def gateway_settings(base_url: str, **overrides: Any) -> EngineSettings:
    """Settings pointing the gateway at a fake server, with backoff short enough for tests."""
    values: dict[str, Any] = {
        "openai_api_key": TEST_API_KEY,
        "openai_base_url": base_url,
        "backoff_base": 0.01,
        "backoff_cap": 0.05,
        "call_timeout": 5.0,
        "overload_wait": 0.0,   # a 503 burst gives up after max_retries, as other errors do
    }
    values.update(overrides)
    return EngineSettings(**values)


def spotlit(prompt_text: str) -> str:
    """The untrusted text a prompt carries, readable again: its spotlighted regions' text."""
    return "\n".join(region.text for region in regions(prompt_text))


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A started fake OpenAI-compatible server on 127.0.0.1, port 0; stopped after the test."""
    async with FakeOpenAI() as fake:
        yield fake
