"""The fake Slack's AI-app thread methods, driven by the real `slack_sdk` client: the documented
required arguments, the four-prompt limit, and the status Slack clears when the app replies."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_server import FakeSlack
from tests.support import fake_slack_fixtures as fx
from tests.support.fake_slack_fixtures import refused

slack, client = fx.slack, fx.client  # fixtures (until conftest imports them)

DM = "D0USER01"


async def test_a_status_shows_until_the_app_replies_in_the_thread(slack: FakeSlack,
                                                                  client: AsyncWebClient) -> None:
    root = slack.add_message(DM, "Should we?", user="UALICE")
    await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root, status="is thinking…")
    assert slack.status(DM, root) == "is thinking…"
    await client.chat_postMessage(channel=DM, text="elsewhere")          # not in the thread
    assert slack.status(DM, root) == "is thinking…"
    await client.chat_postMessage(channel=DM, thread_ts=root, text="the answer")
    assert slack.status(DM, root) == ""
    await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root, status="again")
    await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root, status="")
    assert slack.statuses[(DM, root)] == ["is thinking…", "", "again", ""]


async def test_status_arguments_are_checked(slack: FakeSlack, client: AsyncWebClient) -> None:
    root = slack.add_message(DM, "Should we?", user="UALICE")
    assert await refused(client.assistant_threads_setStatus(
        channel_id=DM, thread_ts="1.000001", status="x")) == "invalid_thread_ts"
    assert await refused(client.api_call("assistant.threads.setStatus", json={
        "channel_id": DM, "status": "x"})) == "invalid_arguments"
    assert await refused(client.assistant_threads_setStatus(
        channel_id=DM, thread_ts=root, status="x",
        loading_messages=[f"m{i}" for i in range(11)])) == "invalid_arguments"
    assert (DM, root) not in slack.statuses


async def test_up_to_four_prompts_each_with_a_title_and_a_message(
        slack: FakeSlack, client: AsyncWebClient) -> None:
    root = slack.add_message(DM, "", user="UALICE")
    prompts = [{"title": f"T{i}", "message": f"M{i}"} for i in range(5)]
    assert await refused(client.assistant_threads_setSuggestedPrompts(
        channel_id=DM, thread_ts=root, prompts=prompts)) == "invalid_arguments"
    assert await refused(client.assistant_threads_setSuggestedPrompts(
        channel_id=DM, thread_ts=root, prompts=[{"title": "T"}])) == "invalid_arguments"
    await client.assistant_threads_setSuggestedPrompts(channel_id=DM, thread_ts=root,
                                                       prompts=prompts[:4], title="Try")
    assert slack.prompts[(DM, root)] == {"title": "Try", "prompts": prompts[:4]}


async def test_a_title_needs_the_thread(slack: FakeSlack, client: AsyncWebClient) -> None:
    root = slack.add_message(DM, "Should we?", user="UALICE")
    assert await refused(client.api_call("assistant.threads.setTitle", json={
        "channel_id": DM, "title": "T"})) == "invalid_arguments"
    await client.assistant_threads_setTitle(channel_id=DM, thread_ts=root, title="Billing")
    assert slack.titles[(DM, root)] == "Billing"
