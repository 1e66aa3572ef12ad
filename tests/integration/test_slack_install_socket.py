"""Multi-workspace mode over Socket Mode: no signing secret, an app token. "Add to Slack" and its
redirect are served by our own HTTP server (the same state and installation stores as HTTP
mode), and every event arrives over the socket (the fake Slack's Socket Mode), answered with
the token of the workspace it was delivered to; a workspace never installed, or uninstalled,
gets nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from tests.fakes.slack_installs import Install
from tests.integration.test_slack_install import (
    T1,
    T2,
    T3,
    command_from,
    home_opened,
    install,
    multi,
    publishes,
    rows,
)
from tests.support.slack_fixtures import Harness

pytestmark = pytest.mark.integration


def over_socket(tmp_path: Path, **more: Any) -> Any:
    return multi(tmp_path, slack_signing_secret=None, slack_app_token="xapp-multi", **more)


async def connected(h: Harness) -> None:
    await h.wait_until(lambda: h.fake.socket_mode.greeted, what="the socket to connect")


async def test_installs_over_http_and_events_over_the_socket_each_with_its_token(
        tmp_path: Path) -> None:
    async with over_socket(tmp_path) as h:
        await connected(h)
        for team in (T1, T2):
            done = await install(h, Install(team))
            assert done.status == 200, await done.text()
        assert sorted(r["team_id"] for r in await rows(h, "slack_bots")) == [T1, T2]
        # no signing secret: nothing is served for Slack to POST events to
        async with h.http.post(h.url, data=home_opened(T1)) as posted:
            assert posted.status in (404, 405)
        for team in (T2, T1):
            ack = await h.fake.socket_mode.deliver(json.loads(home_opened(team)))
            assert ack.get("envelope_id")
        await h.wait_until(lambda: len(h.fake.calls_to("views.publish")) == 2, what="2 homes")
        assert sorted(await publishes(h)) == [T1, T2]

        assert (await h.fake.socket_mode.deliver(json.loads(home_opened(T3)))).get("envelope_id")
        await h.fake.socket_mode.deliver(json.loads(home_opened(T2, "UCAROL")))
        await h.wait_until(lambda: len(h.fake.calls_to("views.publish")) == 3, what="3 homes")
        # never installed: acked, nothing answered (the event after it was)
        assert sorted(await publishes(h)) == [T1, T2, T2]
        assert T3 not in {c.team for c in h.fake.calls}


async def test_a_command_over_the_socket_starts_a_debate_of_its_workspace(
        tmp_path: Path) -> None:
    async with over_socket(tmp_path, workers=0) as h:
        await connected(h)
        for team in (T1, T2):
            await install(h, Install(team))
        h.fake.calls.clear()
        fields = dict(parse_qsl(command_from(h, T2, "Should we adopt Kafka?")))
        await h.fake.socket_mode.deliver(fields, kind="slash_commands")
        debate = await h.one_debate()
        assert debate.origin.team_id == T2
        await h.wait_until(lambda: h.fake.calls_to("chat.postMessage"), what="the thread")
        posting = [c for c in h.fake.calls if c.method.startswith("chat.")]
        assert posting and {c.team for c in posting} == {T2}


async def test_an_uninstall_over_the_socket_removes_the_tokens_and_refuses_after(
        tmp_path: Path) -> None:
    async with over_socket(tmp_path) as h:
        await connected(h)
        for team in (T1, T2):
            await install(h, Install(team))
        body = json.loads(home_opened(T1))
        body["event"] = {"type": "app_uninstalled"}
        body["event_id"] = "EvUninstallSocket"
        await h.fake.socket_mode.deliver(body)

        async def only_t2() -> bool:
            return [r["team_id"] for r in await rows(h, "slack_bots")] == [T2]
        await h.wait_until(only_t2, what="T1's tokens gone")
        h.fake.calls.clear()
        await h.fake.socket_mode.deliver(json.loads(home_opened(T1, "UBOB")))
        await h.fake.socket_mode.deliver(json.loads(home_opened(T2, "UCAROL")))
        await h.wait_until(lambda: h.fake.calls_to("views.publish"), what="T2's home")
        assert await publishes(h) == [T2]
        assert T1 not in {c.team for c in h.fake.calls}
