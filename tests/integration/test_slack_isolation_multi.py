"""Issue 34, requirement 3, on Slack's surfaces in multi-workspace mode: two workspaces installed
through "Add to Slack" (T1, T2) and a third installed then uninstalled through the real
`app_uninstalled` event (T3), each with a debate of its own, beside one of the operator's (API).
Each way round, a workspace's App Home, `/debate status ID` and link unfurls show its own debate
and nothing of the others', answered with its own token; T3 gets nothing at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from storage import debates
from storage.records import DebateStatus, Origin
from tests.fakes.slack_installs import Install
from tests.integration.test_slack_install import T1, T2, home_opened, install, multi
from tests.support.slack_fixtures import CHANNEL, Harness
from tests.support.storage_fixtures import make_record

pytestmark = pytest.mark.integration

T3 = "T3LEFT"
OPERATOR = "operator"
OWNERS = (T1, T2, T3, OPERATOR)


def topic(owner: str) -> str:
    return f"Should the {owner} team adopt Kafka?"


async def seed(h: Harness, owner: str) -> str:
    """A finished debate started in `owner`'s workspace (or the operator's, by the API)."""
    origin = (Origin(surface="api") if owner == OPERATOR
              else Origin(surface="slack", team_id=owner, channel_id=CHANNEL, thread_ts="1.0"))
    record = make_record(topic(owner), status=DebateStatus.COMPLETED).model_copy(
        update={"origin": origin})
    async with h.rt.db.transaction() as session:
        return (await debates.create(session, record=record, topic_key=f"k-{owner}")).id


def envelope(h: Harness, team: str, event: dict[str, Any]) -> str:
    body = h.event_body(event)
    body["team_id"] = team
    body["authorizations"] = [{"team_id": team, "user_id": "UBOT", "is_bot": True}]
    return json.dumps(body)


async def status_reply(h: Harness, team: str, debate_id: str) -> str:
    """What `/debate status ID` typed in `team` answers (its response_url's body)."""
    before = len(h.fake.responses)
    fields = dict(pair.split("=", 1) for pair in
                  h.command_body(f"status {debate_id}", user=f"U{team}").split("&"))
    fields["team_id"] = team
    body = "&".join(f"{k}={v}" for k, v in fields.items())
    assert (await h.send(body, "application/x-www-form-urlencoded")).status == 200
    answers = await h.wait_until(lambda: h.fake.responses[before:], what="the status answer")
    return json.dumps(answers)


async def test_each_workspace_sees_its_own_debate_on_every_slack_surface(tmp_path: Path
                                                                          ) -> None:
    async with multi(tmp_path) as h:
        for team in (T1, T2, T3):
            assert (await install(h, Install(team))).status == 200
        gone = json.loads(home_opened(T3))
        gone["event"], gone["event_id"] = {"type": "app_uninstalled"}, "EvGoneT3"
        assert (await h.send(json.dumps(gone), "application/json")).status == 200

        async def left() -> bool:
            assert h.rt.workspaces is not None
            return await h.rt.workspaces.installed(team_id=T3, enterprise_id=None) is None

        await h.wait_until(left, what="T3 uninstalled")
        ids = {owner: await seed(h, owner) for owner in OWNERS}

        for mine, other in ((T1, T2), (T2, T1)):
            # App Home: its own debate, published with its own token
            published = len(h.fake.calls_to("views.publish"))
            reply = await h.send(home_opened(mine, user=f"U{mine}"), "application/json")
            assert reply.status == 200
            await h.wait_until(lambda n=published: len(h.fake.calls_to("views.publish")) > n,
                               what=f"{mine}'s Home")
            call = h.fake.calls_to("views.publish")[-1]
            home = json.dumps(call.args)
            assert call.team == mine and topic(mine) in home
            assert not [o for o in OWNERS if o != mine and topic(o) in home]
            # /debate status ID: its own answered, the others' not found and not shown
            for owner in OWNERS:
                said = await status_reply(h, mine, ids[owner])
                if owner == mine:
                    assert "Debate finished" in said and ids[mine] in said
                else:
                    assert topic(owner) not in said and "no debate" in said.lower(), owner
                    assert "Debate finished" not in said, owner
            # a link to each debate shared in its channel unfurls its own only
            urls = [h.rt.url(ids[o]) for o in (other, OPERATOR, T3, mine)]
            unfurls = len(h.fake.calls_to("chat.unfurl"))
            shared = h.fake.share_link(CHANNEL, *urls, user=f"U{mine}")
            assert (await h.send(envelope(h, mine, shared), "application/json")).status == 200
            await h.wait_until(lambda n=unfurls: len(h.fake.calls_to("chat.unfurl")) > n,
                               what=f"{mine}'s unfurl")
            unfurl = h.fake.calls_to("chat.unfurl")[-1]
            assert unfurl.team == mine
            assert [e["external_ref"]["id"] for e in unfurl.args["metadata"]["entities"]] == \
                [ids[mine]]

        # the uninstalled workspace: every surface answers nothing and calls Slack for nothing
        calls, responses = len(h.fake.calls), len(h.fake.responses)
        assert (await h.send(home_opened(T3, user="UT3"), "application/json")).text == ""
        shared = h.fake.share_link(CHANNEL, h.rt.url(ids[T3]), user="UT3")
        assert (await h.send(envelope(h, T3, shared), "application/json")).text == ""
        fields = dict(pair.split("=", 1) for pair in
                      h.command_body(f"status {ids[T3]}", user="UT3").split("&"))
        fields["team_id"] = T3
        body = "&".join(f"{k}={v}" for k, v in fields.items())
        assert (await h.send(body, "application/x-www-form-urlencoded")).text == ""
        assert len(h.fake.calls) == calls and len(h.fake.responses) == responses
