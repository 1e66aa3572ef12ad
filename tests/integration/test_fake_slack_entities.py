"""The fake Slack's unfurls and Work Objects, driven by the real `slack_sdk` client: the
documented argument rules of `chat.unfurl` and `entity.presentDetails` are enforced, so a bot
that breaks them fails here as it would against Slack."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.views.feedback import feedback_blocks
from tests.fakes.slack_server import FakeSlack
from tests.support import fake_slack_fixtures as fx
from tests.support.fake_slack_fixtures import refused

slack, client = fx.slack, fx.client  # fixtures (until conftest imports them)

URL = "https://dialectic.test/debates/abc"


def entity(app_unfurl_url: str | None = URL, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "entity_type": "slack#/entities/item", "url": URL, "external_ref": {"id": "abc"},
        "entity_payload": {"attributes": {"title": {"text": "A debate"}},
                           "custom_fields": [{"key": "status", "label": "Status",
                                              "type": "string", "value": "Finished"}],
                           "display_order": ["status"]}}
    if app_unfurl_url is not None:
        value["app_unfurl_url"] = app_unfurl_url
    value.update(changes)
    return value


async def test_chat_unfurl_takes_a_shared_link_of_a_known_message(
        slack: FakeSlack, client: AsyncWebClient) -> None:
    event = slack.share_link("C1", URL)
    where = {"channel": "C1", "ts": event["message_ts"]}
    assert await refused(client.chat_unfurl(channel="C1")) == "invalid_arguments"
    assert await refused(client.chat_unfurl(**where)) == "invalid_arguments"  # nothing to show
    assert await refused(client.chat_unfurl(channel="C1", ts="1.000001",
                                           metadata={"entities": [entity()]})) \
        == "cannot_find_message"
    other = entity("https://dialectic.test/debates/zzz")
    assert await refused(client.chat_unfurl(**where, metadata={"entities": [other]})) \
        == "cannot_unfurl_url"
    reply = await client.chat_unfurl(**where, metadata={"entities": [entity()]})
    assert reply["ok"] and "warning" not in reply.data
    assert slack.unfurls[-1]["metadata"]["entities"][0]["external_ref"] == {"id": "abc"}
    composer = await client.chat_unfurl(unfurl_id=event["unfurl_id"], source="composer",
                                        metadata={"entities": [entity()]})
    assert composer["ok"] and len(slack.unfurls) == 2


@pytest.mark.parametrize(("broken", "says"), [
    (entity(entity_type="slack#/entities/debate"), "unsupported entity_type"),
    (entity(url=""), "url or external_ref.id"),
    (entity(entity_payload={"attributes": {}}), "title.text"),
    (entity(entity_payload={"attributes": {"title": {"text": "t"}},
                            "custom_fields": [{"key": "k", "label": "K", "type": "str"}]}),
     "a known type"),
    (entity(entity_payload={"attributes": {"title": {"text": "t"}},
                            "display_order": ["nope"]}), "unknown fields"),
])
async def test_malformed_metadata_is_dropped_with_a_warning_as_slack_does(
        slack: FakeSlack, client: AsyncWebClient, broken: dict[str, Any], says: str) -> None:
    event = slack.share_link("C1", URL)
    reply = await client.chat_unfurl(channel="C1", ts=event["message_ts"],
                                     metadata={"entities": [broken]})
    assert reply["ok"] and reply["warning"] == "invalid_metadata_format"
    assert says in reply["response_metadata"]["messages"][0]
    assert slack.unfurls == [] and says in slack.warnings[-1]


async def test_present_details_needs_the_trigger_of_the_same_entity(
        slack: FakeSlack, client: AsyncWebClient) -> None:
    opened = slack.open_entity(entity(), user="U1")
    assert opened["external_ref"] == {"id": "abc"} and opened["trigger_id"]
    assert await refused(client.entity_presentDetails(trigger_id="made.up",
                                                     metadata=entity(None))) \
        == "invalid_trigger_id"
    assert await refused(client.entity_presentDetails(trigger_id=opened["trigger_id"])) \
        == "invalid_arguments"
    assert await refused(client.entity_presentDetails(
        trigger_id=opened["trigger_id"], metadata={**entity(None), "external_ref": {"id": "x"}})
    ) == "entity_metadata_does_not_match_trigger"
    assert await refused(client.entity_presentDetails(
        trigger_id=opened["trigger_id"], metadata=entity(None, entity_type="nope"))) \
        == "invalid_metadata"
    reply = await client.entity_presentDetails(trigger_id=opened["trigger_id"],
                                               metadata=entity(None))
    assert reply["ok"] and len(slack.flexpanes) == 1


async def test_a_feedback_press_is_built_from_the_message_buttons(
        slack: FakeSlack, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel="C1", text="result",
                                           blocks=feedback_blocks("abc"))
    press = slack.feedback_press("C1", posted["ts"], "down", user="U1")
    [action] = press["actions"]
    assert action["type"] == "feedback_buttons" and action["value"] == "down:abc"
    assert press["container"]["message_ts"] == posted["ts"]
    with pytest.raises(KeyError):
        slack.feedback_press("C1", slack.add_message("C1", "plain"), "up", user="U1")
