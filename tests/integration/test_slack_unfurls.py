"""Transcript links unfurl as Work Objects through the real Bolt app and the fake Slack: a posted
link gets the debate's entity (topic, status, verdict, agreement, cost), opening it the judges
and the divergence; other links and unknown ids are left alone; another workspace sees nothing;
a rehearsal and an unfinished debate say so."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI
from tests.support.slack_fixtures import (
    CHANNEL,
    PUBLIC_URL,
    USER,
    Harness,
    Reply,
    slack_harness,
)


def _fields(entity: dict[str, Any]) -> dict[str, str]:
    return {f["key"]: f["value"] for f in entity["entity_payload"]["custom_fields"]}


async def _finished(h: Harness, topic: str) -> str:
    await h.command(topic)
    debate = await h.one_debate()
    await h.wait_finished(debate.id)
    return debate.id


async def _unfurled(h: Harness, event: dict[str, Any]) -> dict[str, Any]:
    await h.event(event)
    call = await h.fake.wait_for("chat.unfurl")
    assert call.ok, call.response
    return dict(call.args)


async def _event_of(h: Harness, event: dict[str, Any], team: str) -> Reply:
    """An event from workspace `team` (the harness's own helper sends from its workspace)."""
    body = json.dumps({"token": "legacy", "team_id": team, "api_app_id": "A0FAKE",
                       "event": event, "type": "event_callback",
                       "event_id": h.next_id("Ev"), "event_time": int(time.time()),
                       "authorizations": [{"team_id": team, "user_id": h.fake.bot_user_id,
                                           "is_bot": True}]})
    return await h.send(body, "application/json")


async def test_a_transcript_link_unfurls_and_opens_with_the_judges(tmp_path: Path) -> None:
    async with FakeOpenAI() as openai, slack_harness(tmp_path, openai=openai) as h:
        debate_id = await _finished(h, "Should we <!channel> move billing to PostgreSQL?")
        url = h.rt.url(debate_id)
        event = h.fake.share_link(CHANNEL, "https://example.com/debates/" + debate_id, url,
                                  f"{PUBLIC_URL}/debates/unknown-id", user=USER)
        args = await _unfurled(h, event)
        assert (args["channel"], args["ts"]) == (CHANNEL, event["message_ts"])
        [entity] = args["metadata"]["entities"]          # only this service's known debate
        assert entity["app_unfurl_url"] == url and entity["external_ref"]["id"] == debate_id
        assert entity["entity_type"] == "slack#/entities/item"
        title = entity["entity_payload"]["attributes"]["title"]["text"]
        assert "&lt;!channel&gt;" in title and "<!channel>" not in title
        fields = _fields(entity)
        record = await h.rt.service.get(debate_id)
        assert record.result is not None and record.result.consensus is not None
        assert {"status", "verdict", "agreement", "cost"} <= set(fields)
        assert fields["cost"].startswith("$") and "rehearsal" not in fields
        assert f"{record.result.consensus.alpha:.2f}" in fields["agreement"]
        assert h.fake.warnings == []
        opened = h.fake.open_entity(entity, user=USER, channel=CHANNEL,
                                    message_ts=event["message_ts"])
        await h.event(opened)
        shown = await h.fake.wait_for("entity.presentDetails")
        assert shown.ok, shown.response
        details = _fields(shown.args["metadata"])
        assert all(judge in details["judges"] for judge in record.result.consensus.judges)
        assert {"disagree", "agree"} & set(details)
        assert details["verdict"] == fields["verdict"]


async def test_another_workspace_and_unknown_ids_get_nothing(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        debate_id = await _finished(h, "Should we adopt Kafka?")
        shared = h.fake.share_link(CHANNEL, h.rt.url(debate_id), user=USER)
        entity = (await _unfurled(h, shared))["metadata"]["entities"][0]
        other = h.fake.open_entity({**entity}, user="UOTHER")
        assert (await _event_of(h, other, "TOTHER")).status == 200   # acked, and ignored:
        opened = h.fake.open_entity({**entity, "external_ref": {"id": "no-such-debate"}},
                                    user=USER)
        await _event_of(h, opened, "T0FAKE")
        call = await h.fake.wait_for(
            "entity.presentDetails", lambda c: c.args.get("trigger_id") == opened["trigger_id"])
        assert call.ok and call.args["error"]["custom_title"] == "Debate not found"
        assert "metadata" not in call.args
        # a workspace that is not installed gets no flexpane at all (tests/integration/
        # test_slack_isolation.py has every surface)
        assert [c.args["trigger_id"] for c in h.fake.calls_to("entity.presentDetails")] == [
            opened["trigger_id"]]
        assert h.fake.flexpanes and all("metadata" not in f for f in h.fake.flexpanes)


async def test_a_rehearsal_and_an_unfinished_debate_say_so(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        debate_id = await _finished(h, "Should we adopt Kafka?")
        entity = (await _unfurled(h, h.fake.share_link(CHANNEL, h.rt.url(debate_id))))[
            "metadata"]["entities"][0]
        assert entity["entity_payload"]["attributes"]["title"]["text"].startswith(
            "[Rehearsal] ")
        assert "offline placeholder model" in _fields(entity)["rehearsal"]
    async with slack_harness(tmp_path / "queued", workers=0) as h:
        await h.command("Should we adopt Kafka?")
        queued = await h.one_debate()
        entity = (await _unfurled(h, h.fake.share_link(CHANNEL, h.rt.url(queued.id))))[
            "metadata"]["entities"][0]
        fields = _fields(entity)
        assert fields["state"].startswith("Not finished yet") and "verdict" not in fields
        assert "Queued" in fields["status"]
