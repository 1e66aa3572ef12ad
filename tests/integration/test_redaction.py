"""Credentials inside URL settings never reach logs, errors, events or results; log lines cannot
be forged; a request nobody verified is logged without its body."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from bot.service.logs import RedactingFilter, setup_logging
from bot.service.providers import describe
from bot.settings import load_settings
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.provider.redaction import public_url, url_secrets
from tests.fakes.fixtures import gateway_settings

PASSWORD = "hunter2-s3cret"


@pytest.mark.parametrize(("url", "shown"), [
    (f"http://user:{PASSWORD}@127.0.0.1:9/v1", "http://***@127.0.0.1:9/v1"),
    (f"postgresql+asyncpg://dialectic:{PASSWORD}@db/x", "postgresql+asyncpg://***@db/x"),
    ("https://token@feeds.example/x.txt", "https://***@feeds.example/x.txt"),
    ("https://feeds.example/x?user=a@b", "https://feeds.example/x?user=a@b"),
    ("./signals.txt", "./signals.txt"),
])
def test_a_url_is_shown_without_its_credentials(url: str, shown: str) -> None:
    assert public_url(url) == shown


def test_the_secrets_of_every_url_setting_are_redacted() -> None:
    settings = load_settings({
        "DIALECTIC_CONFIG": "/dev/null",
        "OPENAI_BASE_URL": f"http://llm:{PASSWORD}1@127.0.0.1:9/v1",
        "DATABASE_URL": f"postgresql://dialectic:{PASSWORD}2@db/dialectic",
        "SLACK_API_URL": f"https://bot:{PASSWORD}3@slack.example/api/",
        "DIALECTIC_SCHEDULES": '[{"id": "s", "cron": "0 8 * * 1-5", "channel": "C0123ABC", '
                               f'"source": "https://feed:{PASSWORD}4@feeds.example/x"}}]',
    })
    secrets = settings.secrets()
    for n in "1234":
        assert f"{PASSWORD}{n}" in secrets
    assert PASSWORD not in describe(settings.engine)
    assert url_secrets("http://127.0.0.1/x") == ()


async def test_an_endpoints_credentials_stay_out_of_errors_events_and_results() -> None:
    settings = gateway_settings(f"http://llm:{PASSWORD}@127.0.0.1:9/v1", max_retries=0)
    sink = MemoryEventSink()
    gateway = OpenAIGateway(settings)
    try:
        result = await run_debate(prepare(settings, DebateRequest(topic="t?", mode="simple")),
                                  debate_id="d1", settings=settings, llm=gateway,
                                  store=MemoryCheckpointStore(), sink=sink)
    finally:
        await gateway.aclose()
    assert result.degraded, "the endpoint is unreachable: every step degrades"
    everything = result.model_dump_json() + "".join(e.model_dump_json() for e in sink.events)
    assert "could not reach http://***@127.0.0.1:9/v1" in everything
    assert PASSWORD not in everything and "llm:" not in everything


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    before = root.handlers[:], root.level
    setup_logging("INFO", secrets=(PASSWORD,))
    stream = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    yield stream
    root.handlers[:], level = before
    root.setLevel(level)


def test_a_log_line_cannot_be_forged(captured: io.StringIO) -> None:
    hostile = "topic\n2026-01-01 00:00:00 INFO dialectic: approved by admin\r\x1b[31m\u2028x"
    logging.getLogger("dialectic.test").warning("debate %s", hostile)
    try:
        raise ValueError("line one\nline two")
    except ValueError:
        logging.getLogger("dialectic.test").exception("failed")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2
    assert "topic\\n2026-01-01" in lines[0] and "\\x1b[31m" in lines[0] and "\\u2028" in lines[0]
    assert "line one\\nline two" in lines[1]


def test_credentials_in_any_logged_url_are_masked(captured: io.StringIO) -> None:
    logging.getLogger("dialectic.test").error(
        "cannot connect to postgresql://dialectic:%s@db/x", PASSWORD)
    logging.getLogger("dialectic.test").error("fetching https://tok3n@feeds.example/x failed")
    text = captured.getvalue()
    assert PASSWORD not in text and "tok3n" not in text and "https://***@feeds" in text


def test_an_unverified_request_is_logged_without_its_body(captured: io.StringIO) -> None:
    body = "token=forged&text=" + "A" * 200_000
    logging.getLogger("slack_bolt.AsyncRequestVerification").info(
        "Invalid request signature detected (signature: v0=x, timestamp: 1, body: %s)", body)
    text = captured.getvalue()
    assert "signature" in text and len(text) < 500 and "forged" not in text


def test_the_filter_alone_rewrites_what_it_is_given() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "key %s", ("sk-abcdefghijkl",),
                               None)
    RedactingFilter().filter(record)
    assert record.getMessage() == "key [redacted]"
