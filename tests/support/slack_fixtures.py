"""The whole Slack stack on loopback: the real Bolt app inside `bot.assembly.web_app`, the real
`slack_sdk` client talking to FakeSlack, signed requests, SQLite in tmp_path.

    async with slack_harness(tmp_path) as h:          # rehearsal model, one worker
        reply = await h.command("Should we adopt X?")
        debate = await h.wait_for_status(...)

`slack` is the pytest fixture for the common case; `slack_harness(...)` takes settings overrides,
an optional FakeOpenAI (real gateway instead of rehearsal) and `workers=0` (debates stay queued).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from slack_sdk.models.blocks import Block
from slack_sdk.signature import SignatureVerifier

from bot.assembly import DISPATCHER, Assembly, assembled, web_app
from bot.service.delivery import obligations
from bot.service.runtime import Runtime
from bot.settings import Settings
from bot.slack.delivery import SlackDispatcher
from bot.slack.notifier import SlackNotifier
from engine.settings import PresetSpec, ThresholdSpec
from storage import audit, outbox
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Review
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_server import Call, FakeSlack

SECRET = "secret"
CHANNEL = "CGENERAL"
REVIEW_CHANNEL = "CREVIEW"
USER = "UALICE"
REVIEWER = "UREVIEWER"
TEAM = "T0FAKE"
PUBLIC_URL = "http://dialectic.test"
TEST_PACING = 0.05
WAIT = 20.0
POSTING = ("chat.postMessage", "chat.update", "chat.postEphemeral")

# A preset whose thresholds send every result to a reviewer (short of a unanimous panel, alpha 1).
STRICT = {"strict": PresetSpec(name="strict", mode="consensus", thresholds=ThresholdSpec(
    high=1.0, tentative=1.0, escalate=0.0))}

__all__ = [
    "CHANNEL", "PUBLIC_URL", "REVIEWER", "REVIEW_CHANNEL", "SECRET", "STRICT", "TEAM", "USER",
    "Harness", "Reply", "audit_kinds", "blocks_text", "has_actions", "sign", "slack",
    "slack_harness",
]


def blocks_text(message: dict[str, Any]) -> str:
    """A posted message's blocks as JSON text, to search."""
    return json.dumps(message.get("blocks") or [])


def has_actions(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "actions" for b in message.get("blocks") or [])


async def audit_kinds(h: Harness, debate_id: str) -> list[str]:
    """The kinds of a debate's audit events, oldest first."""
    async with h.rt.db.transaction(readonly=True) as session:
        return [e.kind for e in await audit.events(session, debate_id, limit=5000)]


def sign(body: str, *, secret: str = SECRET, timestamp: int | None = None) -> dict[str, str]:
    """The two headers Slack signs a request with."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


@dataclass(frozen=True)
class Reply:
    """The HTTP answer to one signed request."""

    status: int
    text: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.text) if self.text.startswith("{") else {}


@dataclass
class Harness:
    """The running stack and helpers to talk to it like Slack does."""

    fake: FakeSlack
    parts: Assembly
    server: TestServer
    http: aiohttp.ClientSession
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def rt(self) -> Runtime:
        return self.parts.rt

    @property
    def notifier(self) -> SlackNotifier:
        assert self.parts.notifier is not None
        return self.parts.notifier

    @property
    def url(self) -> str:
        return str(self.server.make_url("/slack/events"))

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):06d}"

    # --- sending ---

    async def send(self, body: str, content_type: str, *, headers: dict[str, str] | None = None,
                   signed: bool = True) -> Reply:
        all_headers = {"Content-Type": content_type, **(sign(body) if signed else {}),
                       **(headers or {})}
        async with self.http.post(self.url, data=body.encode(), headers=all_headers) as resp:
            return Reply(resp.status, await resp.text())

    def command_body(self, text: str, *, user: str = USER, channel: str = CHANNEL,
                     trigger_id: str | None = None) -> str:
        return urlencode({
            "token": "legacy", "team_id": TEAM, "team_domain": "fake", "channel_id": channel,
            "channel_name": channel.lower(), "user_id": user, "user_name": user.lower(),
            "command": "/debate", "text": text, "api_app_id": "A0FAKE",
            "response_url": self.fake.response_url(self.next_id("resp")),
            "trigger_id": trigger_id or self.next_id("trigger."),
        })

    async def command(self, text: str, *, headers: dict[str, str] | None = None,
                      **fields: Any) -> Reply:
        return await self.send(self.command_body(text, **fields),
                               "application/x-www-form-urlencoded", headers=headers)

    def event_body(self, event: dict[str, Any], *, event_id: str | None = None
                   ) -> dict[str, Any]:
        """The Events API envelope Slack wraps `event` in (POSTed, or sent over the socket)."""
        return {
            "token": "legacy", "team_id": TEAM, "api_app_id": "A0FAKE", "event": event,
            "type": "event_callback", "event_id": event_id or self.next_id("Ev"),
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": self.fake.bot_user_id,
                                "is_bot": True}],
        }

    async def event(self, event: dict[str, Any], *, event_id: str | None = None,
                    headers: dict[str, str] | None = None) -> Reply:
        body = json.dumps(self.event_body(event, event_id=event_id))
        return await self.send(body, "application/json", headers=headers)

    async def interaction(self, payload: dict[str, Any]) -> Reply:
        payload = {"team": {"id": TEAM}, "api_app_id": "A0FAKE", "token": "legacy", **payload}
        body = urlencode({"payload": json.dumps(payload)})
        return await self.send(body, "application/x-www-form-urlencoded")

    async def press(self, action_id: str, value: str, *, user: str, channel: str,
                    message_ts: str) -> Reply:
        return await self.interaction({
            "type": "block_actions", "user": {"id": user}, "trigger_id": self.next_id("trig."),
            "container": {"type": "message", "channel_id": channel, "message_ts": message_ts},
            "channel": {"id": channel}, "message": {"ts": message_ts},
            "response_url": self.fake.response_url(self.next_id("resp")),
            "actions": [{"action_id": action_id, "block_id": "review_actions", "value": value,
                         "type": "button"}],
        })

    async def submit_view(self, view: dict[str, Any], values: dict[str, Any], *,
                          user: str) -> Reply:
        submitted = {**view, "state": {"values": values}}
        return await self.interaction({"type": "view_submission", "user": {"id": user},
                                       "trigger_id": self.next_id("trig."), "view": submitted})

    # --- waiting and reading ---

    async def wait_until(self, check: Any, *, timeout: float = WAIT, what: str = "") -> Any:
        """Poll `check()` (sync or async) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what or check}")
            await asyncio.sleep(0.02)

    async def debates(self) -> list[DebateRecord]:
        return await self.rt.service.recent(limit=100)

    # --- the outbox ---

    @property
    def dispatcher(self) -> SlackDispatcher:
        dispatcher = self.server.app[DISPATCHER]
        assert dispatcher is not None
        return dispatcher

    async def owe(self, record: DebateRecord, review: Review | None = None) -> None:
        """Write what `record` owes Slack, as the service does when a debate finishes."""
        now = self.rt.service.clock()
        async with self.rt.db.transaction() as session:
            for owed in obligations(record, review, targets=frozenset({"slack"}), now=now):
                await outbox.owe(session, debate_id=record.id, kind=owed.kind, ref=owed.ref,
                                 now=now)
        self.dispatcher.notify()

    async def delivered(self, *, timeout: float = WAIT) -> None:
        """Until nothing owed to Slack is pending or being delivered (a failed one may wait)."""
        async def check() -> bool:
            self.dispatcher.notify()
            await self.dispatcher.drain()
            async with self.rt.db.transaction(readonly=True) as session:
                left = await outbox.backlog(session)
            return left.pending == 0 and not self.dispatcher.delivering

        await self.wait_until(check, timeout=timeout, what="Slack deliveries")

    async def one_debate(self) -> DebateRecord:
        found = await self.wait_until(self.debates, what="a debate")
        assert len(found) == 1, [d.id for d in found]
        return found[0]

    async def wait_finished(self, debate_id: str,
                            statuses: Iterable[DebateStatus] = (*TERMINAL_STATUSES,
                                                                DebateStatus.AWAITING_REVIEW)
                            ) -> DebateRecord:
        wanted = set(statuses)

        async def check() -> DebateRecord | None:
            record = await self.rt.service.get(debate_id)
            return record if record.status in wanted else None

        return await self.wait_until(check, what=f"debate {debate_id} to finish")

    async def wait_reply(self, channel: str, thread_ts: str, startswith: str) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            return next((m for m in self.fake.replies(channel, thread_ts)
                         if str(m.get("text", "")).startswith(startswith)), None)

        return await self.wait_until(check, what=f"a reply starting {startswith!r}")

    def posted(self) -> list[Call]:
        """Every call that put content in front of someone (messages, updates, ephemerals)."""
        return [c for c in self.fake.calls if c.method in POSTING or c.method == "response_url"]

    def posted_content(self) -> list[str]:
        """Text and blocks of everything posted, as JSON strings: what escaping is checked on."""
        return [json.dumps({"text": c.args.get("text"), "blocks": c.args.get("blocks")})
                for c in self.posted()]

    def assert_all_blocks_valid(self) -> None:
        assert self.fake.invalid_blocks == []
        assert self.fake.warnings == []
        for call in self.posted():
            blocks = call.args.get("blocks")
            if blocks:
                assert all(b is not None for b in Block.parse_all(blocks)), call.method
            assert call.args.get("text"), f"{call.method} without a top-level text"
        for call in self.fake.calls_to("chat.postMessage"):
            assert str(call.args.get("unfurl_links")).lower() == "false", call.args
            assert str(call.args.get("unfurl_media")).lower() == "false", call.args


def harness_settings(tmp_path: Path, fake: FakeSlack, openai: FakeOpenAI | None,
                     overrides: dict[str, Any]) -> Settings:
    values: dict[str, Any] = {
        "rehearsal": openai is None, "database_url": f"sqlite+aiosqlite:///{tmp_path}/t.db",
        "slack_bot_token": "xoxb-test", "slack_signing_secret": SECRET,
        "slack_api_url": fake.base_url, "review_channel": REVIEW_CHANNEL,
        "reviewers": (REVIEWER,), "poll_interval": 0.05, "public_url": PUBLIC_URL,
        "cache_ttl_seconds": 0, "worker_concurrency": 2, "slack_post_interval": TEST_PACING,
        # the status message and phase replies; the plan stream has its own tests
        # (test_slack_plan.py), which pass slack_streaming="auto"
        "slack_streaming": "off",
    }
    if openai is not None:
        values.update(openai_api_key="test-key", openai_base_url=openai.base_url,
                      backoff_base=0.01, backoff_cap=0.05, call_timeout=5.0)
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def slack_harness(tmp_path: Path, *, openai: FakeOpenAI | None = None,
                        workers: int | None = None, **overrides: Any) -> AsyncIterator[Harness]:
    """Start FakeSlack, the runtime (migrated SQLite) and the server; stop them afterwards."""
    async with FakeSlack() as fake:
        settings = harness_settings(tmp_path, fake, openai, overrides)
        async with assembled(settings) as parts:
            app = web_app(parts, settings, workers=workers, scheduler=False)
            server = TestServer(app, host="127.0.0.1", port=0)
            await server.start_server()
            try:
                async with aiohttp.ClientSession() as http:
                    yield Harness(fake=fake, parts=parts, server=server, http=http)
            finally:
                await server.close()


@pytest.fixture
async def slack(tmp_path: Path) -> AsyncIterator[Harness]:
    """The stack in rehearsal mode with one worker pool."""
    async with slack_harness(tmp_path) as harness:
        yield harness
