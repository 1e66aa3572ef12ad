"""The fake Slack Web API, driven by the real `slack_sdk` AsyncWebClient over loopback.

It checks the fake behaves like Slack where the bot depends on it (auth, rate limits with
Retry-After, not_in_channel, message state after chat.update, block validation, response_url),
and that every message `bot.blocks` renders is accepted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.slack.views import debate, home, modals, notices, review
from storage.records import ReviewStatus
from tests.fakes.slack_server import FakeSlack
from tests.support.slack_view_fixtures import RESULTS, TRANSCRIPT, WHEN, record_for, review_for

SECTION = {"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    web = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
    web.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=2))
    return web


async def error_of(call: Any) -> str:
    with pytest.raises(SlackApiError) as info:
        await call
    return str(info.value.response["error"])


# --------------------------------------------------------------------------------------------
# basics


async def test_base_url_and_auth(slack: FakeSlack, client: AsyncWebClient) -> None:
    assert slack.base_url.startswith("http://127.0.0.1:") and slack.base_url.endswith("/api/")
    reply = await client.auth_test()
    assert reply["user_id"] == slack.bot_user_id and reply["team_id"] == slack.team_id
    assert await error_of(AsyncWebClient(base_url=slack.base_url).auth_test()) == "not_authed"
    bad = AsyncWebClient(token="nope", base_url=slack.base_url)
    assert await error_of(bad.auth_test()) == "invalid_auth"
    assert all("token" not in c.args for c in slack.calls)


async def test_unknown_method(client: AsyncWebClient) -> None:
    assert await error_of(client.api_call("chat.scheduleMessage")) == "unknown_method"


async def test_post_message_ts_increase_and_threads(slack: FakeSlack,
                                                    client: AsyncWebClient) -> None:
    root = await client.chat_postMessage(channel="C1", text="root", unfurl_links=False)
    replies = [await client.chat_postMessage(channel="C1", text=f"r{i}", thread_ts=root["ts"])
               for i in range(3)]
    stamps = [root["ts"], *(r["ts"] for r in replies)]
    assert root["ts"] == "1700000000.000100" and root["channel"] == "C1"
    assert [float(s) for s in stamps] == sorted({float(s) for s in stamps})
    assert [m["text"] for m in slack.replies("C1", root["ts"])] == ["r0", "r1", "r2"]
    assert slack.message("C1", root["ts"])["reply_count"] == 3  # type: ignore[index]
    assert slack.messages("C1")[0]["unfurl_links"] is False
    link = await client.chat_getPermalink(channel="C1", message_ts=replies[0]["ts"])
    assert link["permalink"].endswith(f"?thread_ts={root['ts']}&cid=C1")


async def test_update_changes_the_recorded_message(slack: FakeSlack,
                                                   client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel="C1", text="status 1/5", blocks=[SECTION])
    await client.chat_update(channel="C1", ts=posted["ts"], text="status 2/5")
    (message,) = slack.messages("C1")
    assert message["text"] == "status 2/5" and message["blocks"] == [SECTION]  # blocks kept
    assert "edited" in message
    new_blocks = [{"type": "divider"}]
    await client.chat_update(channel="C1", ts=posted["ts"], text="done", blocks=new_blocks)
    assert slack.messages("C1")[0]["blocks"] == new_blocks
    assert await error_of(client.chat_update(channel="C1", ts="1.2", text="x")) == \
        "message_not_found"


async def test_messages_are_copies(slack: FakeSlack, client: AsyncWebClient) -> None:
    await client.chat_postMessage(channel="C1", text="keep")
    slack.messages("C1")[0]["text"] = "changed by a test"
    assert slack.messages("C1")[0]["text"] == "keep"


# --------------------------------------------------------------------------------------------
# faults


async def test_rate_limit_is_retried_by_the_sdk_handler(slack: FakeSlack,
                                                        client: AsyncWebClient) -> None:
    slack.rate_limit("chat.postMessage", times=1, retry_after=0)
    reply = await client.chat_postMessage(channel="C1", text="after a 429")
    assert reply["ok"]
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [429, 200]
    assert len(slack.messages("C1")) == 1


async def test_rate_limit_without_handler_raises_with_retry_after(slack: FakeSlack) -> None:
    slack.rate_limit("chat.update", retry_after=7)
    web = AsyncWebClient(token="xoxb-test", base_url=slack.base_url)
    with pytest.raises(SlackApiError) as info:
        await web.chat_update(channel="C1", ts="1.0", text="x")
    assert info.value.response.status_code == 429
    assert info.value.response.headers["Retry-After"] in ("7", ["7"])
    assert info.value.response["error"] == "ratelimited"


async def test_not_in_channel_until_joined(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.not_in_channel("C9")
    assert await error_of(client.chat_postMessage(channel="C9", text="x")) == "not_in_channel"
    assert (await client.conversations_info(channel="C9"))["channel"]["is_member"] is False
    await client.conversations_join(channel="C9")
    assert (await client.conversations_info(channel="C9"))["channel"]["is_member"] is True
    assert (await client.chat_postMessage(channel="C9", text="x"))["ok"]


async def test_private_channels_and_channel_errors(slack: FakeSlack,
                                                   client: AsyncWebClient) -> None:
    slack.add_channel("G1", "secret", is_private=True, is_member=False)
    assert await error_of(client.conversations_join(channel="G1")) == \
        "method_not_supported_for_channel_type"
    slack.channel_error("C2", "is_archived")
    assert await error_of(client.chat_postMessage(channel="C2", text="x")) == "is_archived"
    assert await error_of(client.conversations_info(channel="nope")) == "channel_not_found"


async def test_fail_n_times_then_succeed(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.fail("views.open", "expired_trigger_id", times=2)
    view = review.escalate_modal("rev-1")
    for _ in range(2):
        assert await error_of(client.views_open(trigger_id="t", view=view)) == \
            "expired_trigger_id"
    assert (await client.views_open(trigger_id="t", view=view))["ok"]


# --------------------------------------------------------------------------------------------
# validation


def long_blocks(count: int, size: int) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * size}}] * count


MISSING_TEXT = "ignore:The top-level `text` argument is missing:UserWarning"


@pytest.mark.filterwarnings(MISSING_TEXT)
@pytest.mark.parametrize(("kwargs", "error"), [
    ({"text": "t", "blocks": [{"type": "section"}]}, "invalid_blocks"),
    ({"text": "t", "blocks": [{"type": "no_such_block"}]}, "invalid_blocks"),
    ({"text": "t", "blocks": long_blocks(1, 3001)}, "invalid_blocks"),
    ({"text": "t", "blocks": [{"type": "section",
                               "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}]},
     "invalid_blocks"),
    ({"text": "t", "blocks": [{"type": "divider"}] * 51}, "invalid_blocks"),
    ({"text": "t", "blocks": long_blocks(5, 2900)}, "msg_blocks_too_long"),
    ({}, "no_text"),
    ({"text": "x" * 40_001}, "msg_too_long"),
])
async def test_invalid_messages_are_rejected(slack: FakeSlack, client: AsyncWebClient,
                                             kwargs: dict[str, Any], error: str) -> None:
    assert await error_of(client.chat_postMessage(channel="C1", **kwargs)) == error
    assert slack.messages("C1") == []
    if error not in ("no_text", "msg_too_long"):
        assert slack.invalid_blocks


async def test_update_with_invalid_blocks_keeps_the_old_state(slack: FakeSlack,
                                                              client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel="C1", text="t", blocks=[SECTION])
    bad = client.chat_update(channel="C1", ts=posted["ts"], text="t", blocks=[{"type": "header"}])
    assert await error_of(bad) == "invalid_blocks"
    assert slack.messages("C1")[0]["blocks"] == [SECTION]


@pytest.mark.filterwarnings(MISSING_TEXT)
async def test_blocks_without_text_are_accepted_with_a_warning(slack: FakeSlack,
                                                               client: AsyncWebClient) -> None:
    await client.chat_postMessage(channel="C1", blocks=[SECTION])
    assert slack.warnings == ["chat.postMessage: missing_text_or_fallback_or_attachments"]


async def test_form_encoded_bodies_are_decoded(slack: FakeSlack) -> None:
    data = {"channel": "C1", "text": "form", "blocks": json.dumps([SECTION])}
    async with aiohttp.ClientSession() as session:
        async with session.post(slack.base_url + "chat.postMessage", data=data,
                                headers={"Authorization": "Bearer xoxb-x"}) as response:
            assert (await response.json())["ok"]
        async with session.post(slack.base_url + "auth.test") as response:
            assert (await response.json())["error"] == "not_authed"
    assert slack.messages("C1")[0]["blocks"] == [SECTION]


# --------------------------------------------------------------------------------------------
# the rest of the surface


async def test_views(slack: FakeSlack, client: AsyncWebClient) -> None:
    opened = await client.views_open(trigger_id="t1", view=modals.debate_modal(["default"],
                                                                          ["simple"], "C1"))
    view_id = opened["view"]["id"]
    assert slack.views[view_id]["callback_id"] == "debate_modal"
    updated = await client.views_update(view_id=view_id, view=review.escalate_modal("rev-1"),
                                        hash=opened["view"]["hash"])
    assert updated["view"]["private_metadata"] == "rev-1"
    assert await error_of(client.views_update(view_id=view_id, view=review.escalate_modal("r"),
                                              hash="stale")) == "hash_conflict"
    assert await error_of(client.views_update(view_id="V404", view=review.escalate_modal("r"))) == \
        "not_found"
    tab = home.app_home([record_for()], {}, [], is_reviewer=False, public_url=TRANSCRIPT)
    await client.views_publish(user_id="U1", view=tab)
    assert slack.home_views["U1"]["type"] == "home"
    bad = {"type": "modal", "title": {"type": "plain_text", "text": "x" * 25}, "blocks": []}
    assert await error_of(client.views_open(trigger_id="t2", view=bad)) == "invalid_arguments"
    assert await error_of(client.views_publish(user_id="U1", view=review.escalate_modal("r"))) == \
        "invalid_arguments"


async def test_usergroups_and_users(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.set_usergroup("S1", ["U1", "U2"])
    assert (await client.usergroups_users_list(usergroup="S1"))["users"] == ["U1", "U2"]
    assert await error_of(client.usergroups_users_list(usergroup="S9")) == "no_such_subteam"
    slack.add_user("U1", "ada", real_name="Ada Lovelace")
    assert (await client.users_info(user="U1"))["user"]["real_name"] == "Ada Lovelace"
    assert (await client.users_info(user="U77"))["user"]["name"] == "u77"
    assert await error_of(client.users_info(user="nobody")) == "user_not_found"


async def test_ephemeral_and_reactions(slack: FakeSlack, client: AsyncWebClient) -> None:
    reply = await client.chat_postEphemeral(channel="C1", user="U1", text="only you")
    assert slack.ephemerals[0]["user"] == "U1" and reply["message_ts"]
    ts = slack.add_message("C1", "a human message")
    await client.reactions_add(channel="C1", timestamp=ts, name="eyes")
    assert slack.message("C1", ts)["reactions"][0]["name"] == "eyes"  # type: ignore[index]
    assert await error_of(client.reactions_add(channel="C1", timestamp=ts, name="eyes")) == \
        "already_reacted"


async def test_response_url_records_and_wears_out(slack: FakeSlack) -> None:
    url = slack.response_url("tok1")
    webhook = AsyncWebhookClient(url)
    message = notices.error("That channel is private: invite me with /invite @dialectic")
    response = await webhook.send(text=message.text, blocks=message.blocks,
                                  response_type="ephemeral")
    assert response.status_code == 200
    assert slack.responses[0]["text"] == message.text
    assert slack.responses_to("tok1")[0]["response_type"] == "ephemeral"
    for _ in range(4):
        await webhook.send(text="again")
    assert (await webhook.send(text="sixth")).status_code == 404
    assert (await slack.wait_for("response_url")).target == "tok1"


async def test_wait_for_future_calls_and_timeouts(slack: FakeSlack,
                                                  client: AsyncWebClient) -> None:
    async def later() -> None:
        await asyncio.sleep(0.05)
        await client.chat_postMessage(channel="C1", text="first")
        await client.chat_postMessage(channel="C1", text="second")

    task = asyncio.create_task(later())
    call = await slack.wait_for("chat.postMessage", lambda c: c.args.get("text") == "second")
    assert call.ok and call.response["message"]["text"] == "second"
    await task
    with pytest.raises(TimeoutError, match=r"chat\.update"):
        await slack.wait_for("chat.update", timeout=0.05)


# --------------------------------------------------------------------------------------------
# everything bot.blocks renders is accepted


@pytest.mark.parametrize("name", sorted(RESULTS))
async def test_rendered_messages_are_accepted(slack: FakeSlack, client: AsyncWebClient,
                                              name: str) -> None:
    result = RESULTS[name]()
    summary = debate.divergence_summary(result, transcript_url=TRANSCRIPT)
    root = await client.chat_postMessage(channel="C1", **summary.kwargs())
    for phase in result.phases[:3]:
        reply = debate.phase_reply(phase, rehearsal=result.rehearsal, transcript_url=TRANSCRIPT)
        await client.chat_postMessage(channel="C1", thread_ts=root["ts"], **reply.kwargs())
    request = review.review_request(review_for(), result, transcript_url=TRANSCRIPT,
                               thread_link=None)
    posted = await client.chat_postMessage(channel="C1", **request.kwargs())
    decided = review.review_decided(review_for(ReviewStatus.APPROVED, decided_by="U1",
                                          decided_at=WHEN), result, transcript_url=TRANSCRIPT)
    await client.chat_update(channel="C1", ts=posted["ts"], **decided.kwargs())
    state = slack.message("C1", posted["ts"])
    assert state is not None and "Approved by <@U1>" in json.dumps(state["blocks"])
    assert not slack.invalid_blocks and not slack.warnings
