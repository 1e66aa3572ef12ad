"""One workspace's debates stay with that workspace, through the real Bolt app and the fake Slack,
every request signed: the installed workspace (T0FAKE, the bot token's) works as before; a
workspace that is not installed (T2), and a payload naming no workspace, get nothing and change
nothing (no debate, no budget movement, no stored message or delivery id, no feedback, no
unfurl, no flexpane, no Home tab, no reply); the operator's debates (API, CLI, eval) never
unfurl, open or take feedback in the installed workspace either."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bot.slack.views import feedback as F
from bot.slack.views import review as R
from engine.domain import DebateRequest
from storage import debates, feedback, reviews
from storage import slack as slack_store
from storage.records import Origin, ReviewStatus
from tests.support.slack_fixtures import (
    CHANNEL,
    REVIEW_CHANNEL,
    REVIEWER,
    STRICT,
    TEAM,
    USER,
    Harness,
    Reply,
    slack_harness,
)

T2 = "T2OTHER"
SECRET = "Secret API-only compliance question: may we keep the audit logs for 2 years?"
OTHER_TOPIC = "Should the other workspace's team adopt Rust?"
NOBODY = object()   # a payload that names no workspace at all


def _event_body(h: Harness, event: dict[str, Any], team: object, *,
                delivered_to: object = None, event_id: str | None = None) -> str:
    """The Events API envelope as Slack would send it for `team` (NOBODY: no team anywhere);
    `delivered_to`: the installation in `authorizations` when it differs (Slack Connect)."""
    body = h.event_body(event, event_id=event_id)
    if team is NOBODY:
        body.pop("team_id")
        body.pop("authorizations")
    else:
        body["team_id"] = team
        body["authorizations"] = [{"team_id": delivered_to or team,
                                   "user_id": h.fake.bot_user_id, "is_bot": True}]
    return json.dumps(body)


async def _event(h: Harness, event: dict[str, Any], team: object, **kw: Any) -> Reply:
    return await h.send(_event_body(h, event, team, **kw), "application/json")


async def _interaction(h: Harness, payload: dict[str, Any], team: object) -> Reply:
    payload = {"api_app_id": "A0FAKE", "token": "legacy", **payload}
    payload.pop("team", None)
    if team is not NOBODY:
        payload["team"] = {"id": team}
    body = urlencode({"payload": json.dumps(payload)})
    return await h.send(body, "application/x-www-form-urlencoded")


async def _command(h: Harness, text: str, team: object) -> Reply:
    fields = dict(pair.split("=", 1) for pair in h.command_body(text).split("&"))
    if team is NOBODY:
        fields.pop("team_id")
    else:
        fields["team_id"] = str(team)
    body = "&".join(f"{k}={v}" for k, v in fields.items())
    return await h.send(body, "application/x-www-form-urlencoded")


def _dm(h: Harness, text: str, user: str = USER) -> dict[str, Any]:
    ts = h.fake.add_message("D0DM0001", text, user=user)
    return {"type": "message", "channel": "D0DM0001", "channel_type": "im", "user": user,
            "ts": ts, "text": text, "event_ts": ts}


async def _finished_debate(h: Harness, topic: str, origin: Origin) -> str:
    """A debate started elsewhere than through this Slack (the API, or another workspace)."""
    sub = await h.rt.service.submit(DebateRequest(topic=topic, mode="simple"), origin=origin)
    h.rt.notify_workers()
    await h.wait_finished(sub.record.id)
    return sub.record.id


async def _slack_debate(h: Harness, topic: str) -> str:
    """A debate of the installed workspace, started with /debate, finished."""
    before = {d.id for d in await h.debates()}
    await h.command(topic + " --mode simple")

    async def started() -> str | None:
        return next((d.id for d in await h.debates() if d.id not in before), None)

    debate_id: str = await h.wait_until(started, what="the new debate")
    await h.wait_finished(debate_id)
    return debate_id


def _shown(h: Harness) -> list[str]:
    """Every Slack method called that puts something in front of someone."""
    return [c.method for c in h.fake.calls if c.method != "auth.test"]


async def _nothing_changed(h: Harness) -> None:
    assert await h.debates() == []
    budget = await h.rt.service.budget_today()
    assert (budget["spent_usd"], budget["reserved_usd"]) == (0.0, 0.0)
    assert _shown(h) == [] and h.fake.responses == []


async def test_another_workspace_or_none_starts_nothing_and_spends_nothing(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        for team in (T2, NOBODY):
            dm = _dm(h, "Should we raise prices? --mode simple", user="UOTHER")
            assert (await _event(h, dm, team, event_id=f"EvDM{team is NOBODY}")).status == 200
            mention = {"type": "app_mention", "channel": CHANNEL, "user": "UOTHER",
                       "ts": h.fake.add_message(CHANNEL, "<@UBOT0001> debate X?", user="U2"),
                       "text": f"<@{h.fake.bot_user_id}> debate Should we fork?"}
            assert (await _event(h, mention, team)).status == 200
            assert (await _command(h, "Should we fork the project?", team)).status == 200
            assert (await _command(h, "budget", team)).text == ""
            appeal = {"type": "message_action", "callback_id": "appeal_decision",
                      "trigger_id": h.next_id("trig."), "user": {"id": "UOTHER"},
                      "channel": {"id": CHANNEL}, "message": {"ts": "1.000001", "text": "x"}}
            assert (await _interaction(h, appeal, team)).status == 200
        await _nothing_changed(h)
        async with h.rt.db.transaction(readonly=True) as session:
            assert await slack_store.thread_messages(session, channel_id=CHANNEL,
                                                     thread_ts=mention["ts"]) == []
        # nothing was stored, not even the delivery id: the same event from the installed
        # workspace is handled as new, and starts its debate there
        dm = _dm(h, "Should we raise prices? --mode simple")
        await _event(h, dm, TEAM, event_id="EvDMFalse")
        [debate] = await h.wait_until(h.debates, what="the installed workspace's debate")
        assert debate.origin.team_id == TEAM and debate.origin.surface == "slack"


async def test_a_slack_connect_event_belongs_to_the_workspace_it_was_delivered_to(
        tmp_path: Path) -> None:
    """A person of another organisation writes in a shared channel of the installed workspace:
    the event's outer team is theirs, its authorisation the installed workspace's."""
    async with slack_harness(tmp_path, workers=0) as h:
        ts = h.fake.add_message(CHANNEL, "debate", user="UGUEST")
        mention = {"type": "app_mention", "channel": CHANNEL, "user": "UGUEST", "ts": ts,
                   "user_team": T2, "text": f"<@{h.fake.bot_user_id}> debate Should we merge?"}
        await _event(h, mention, T2, delivered_to=TEAM)
        [debate] = await h.wait_until(h.debates, what="the shared channel's debate")
        assert debate.origin.team_id == TEAM          # the installed workspace's, not T2's


async def test_app_home_shows_the_workspace_own_debates_and_spend_only(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        mine = await _slack_debate(h, "Should we adopt Kafka?")
        await _finished_debate(h, SECRET, Origin(surface="api"))
        await _finished_debate(h, OTHER_TOPIC, Origin(surface="slack", team_id=T2,
                                                      channel_id="C2"))
        await h.event({"type": "app_home_opened", "user": USER, "channel": "D0HOME",
                       "tab": "home"})
        await h.fake.wait_for("views.publish")
        home = json.dumps(h.fake.home_views[USER]["blocks"])
        assert "Kafka" in home and mine in home
        assert "Secret" not in home and "Rust" not in home
        assert "Spent today by this workspace" in home
        assert "Daily cap" not in home and "Remaining" not in home   # the operator's figures
        for team in (T2, NOBODY):
            opened = {"type": "app_home_opened", "user": "UOTHER", "channel": "D0H2",
                      "tab": "home"}
            assert (await _event(h, opened, team)).status == 200
        assert "UOTHER" not in h.fake.home_views
        assert [c.args["user_id"] for c in h.fake.calls_to("views.publish")] == [USER]


async def test_only_the_workspace_own_debates_unfurl_and_open(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        mine = await _slack_debate(h, "Should we adopt Kafka?")
        operator = await _finished_debate(h, SECRET, Origin(surface="api"))
        other = await _finished_debate(h, OTHER_TOPIC, Origin(surface="slack", team_id=T2))
        urls = [h.rt.url(d) for d in (operator, other, mine)]
        await h.event(h.fake.share_link(CHANNEL, *urls, user=USER))
        unfurled = await h.fake.wait_for("chat.unfurl")
        assert [e["external_ref"]["id"] for e in unfurled.args["metadata"]["entities"]] == [mine]
        entity = unfurled.args["metadata"]["entities"][0]
        opened = h.fake.open_entity({**entity, "external_ref": {"id": operator}}, user=USER)
        await h.event(opened)
        call = await h.fake.wait_for("entity.presentDetails")
        assert call.args["error"]["custom_title"] == "Debate not found"
        assert "Secret" not in json.dumps(call.args)
        for team in (T2, NOBODY):   # the installed workspace's own debate, asked from outside
            await _event(h, h.fake.share_link(CHANNEL, h.rt.url(mine), user="UOTHER"), team)
            await _event(h, h.fake.open_entity(entity, user="UOTHER"), team)
        assert len(h.fake.calls_to("chat.unfurl")) == 1
        assert len(h.fake.calls_to("entity.presentDetails")) == 1


async def _stored(h: Harness, debate_id: str, user: str) -> feedback.Feedback | None:
    async with h.rt.db.transaction(readonly=True) as session:
        return await feedback.get(session, debate_id, user)


async def test_feedback_is_taken_on_the_workspace_own_results_only(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        mine = await _slack_debate(h, "Should we adopt Kafka?")
        operator = await _finished_debate(h, SECRET, Origin(surface="api"))
        root = h.fake.messages(CHANNEL)[0]

        def result() -> dict[str, Any] | None:
            return next((m for m in h.fake.replies(CHANNEL, root["ts"])
                         if "Debate result" in str(m.get("text", ""))), None)

        summary = await h.wait_until(result, what="the result message")
        press = h.fake.feedback_press(CHANNEL, summary["ts"], "up", user=USER)
        on_operator = {**press, "actions": [{**press["actions"][0],
                                             "value": f"up:{operator}"}]}
        await h.interaction(on_operator)
        said = await h.fake.wait_for("chat.postEphemeral")
        assert "cannot find" in said.args["text"]
        for team in (T2, NOBODY):
            assert (await _interaction(h, {**press, "user": {"id": "UOTHER"}}, team)
                    ).status == 200
        assert await _stored(h, operator, USER) is None
        assert await _stored(h, mine, "UOTHER") is None
        assert len(h.fake.calls_to("chat.postEphemeral")) == 1   # the other gets no answer
        await h.interaction(press)
        stored = await h.wait_until(lambda: _stored(h, mine, USER), what="the thumb")
        assert stored.team_id == TEAM and stored.rating == "up"


async def test_status_by_id_shows_the_workspace_own_debates_only(tmp_path: Path) -> None:
    async with slack_harness(tmp_path) as h:
        mine = await _slack_debate(h, "Should we adopt Kafka?")
        operator = await _finished_debate(h, SECRET, Origin(surface="api"))
        other = await _finished_debate(h, OTHER_TOPIC, Origin(surface="slack", team_id=T2,
                                                              channel_id=CHANNEL))
        async with h.rt.db.transaction() as session:   # a shared channel: its thread is here
            await slack_store.link_thread(session, channel_id=CHANNEL, thread_ts="9.000001",
                                          debate_id=other)
        answers = []
        for debate_id in (operator, other, mine):
            before = len(h.fake.responses)
            await h.command(f"status {debate_id}")

            def answer(b: int = before, d: str = debate_id) -> list[str]:
                return [t for r in h.fake.responses[b:] if d in (t := json.dumps(r))]

            answers.append((await h.wait_until(answer, what="the status"))[0])
        assert all("Secret" not in a and "Rust" not in a for a in answers)
        assert all("not found" in a.lower() or "no debate" in a.lower() for a in answers[:2])
        assert "Debate finished" in answers[2]   # its own: the status, as before
        before = len(h.fake.responses)
        await h.command("status")                      # the channel's latest: its own only

        def listing() -> list[str]:
            return [t for r in h.fake.responses[before:]
                    if mine in (t := json.dumps(r))]

        latest = (await h.wait_until(listing, what="the channel status"))[0]
        assert other not in latest and "Rust" not in latest
        calls, responses = len(h.fake.calls), len(h.fake.responses)
        for team in (T2, NOBODY):
            assert (await _command(h, f"status {mine}", team)).text == ""
        assert len(h.fake.calls) == calls and len(h.fake.responses) == responses


async def test_an_org_wide_install_admits_its_organisation_only(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0) as h:
        h.fake.enterprise_id, h.fake.enterprise_install = "E1", True
        for enterprise in ("E2", None):                # another organisation, or none named
            body = json.loads(_event_body(h, _dm(h, "Should we fork? --mode simple"), "T9"))
            body["enterprise_id"] = enterprise
            body["authorizations"][0]["enterprise_id"] = enterprise
            await h.send(json.dumps(body), "application/json")
        body = json.loads(_event_body(h, _dm(h, "Should we merge? --mode simple"), "T9"))
        body["enterprise_id"] = body["authorizations"][0]["enterprise_id"] = "E1"
        body["authorizations"][0]["is_enterprise_install"] = True
        await h.send(json.dumps(body), "application/json")

        async def merged() -> list[str]:
            topics = [d.request.topic for d in await h.debates()]
            return topics if "Should we merge?" in topics else []

        assert await h.wait_until(merged, what="the organisation's debate") == [
            "Should we merge?"]                        # and nothing of the other two
        [debate] = await h.debates()
        assert debate.origin.team_id == "T9"


async def test_a_refusal_is_one_log_line(tmp_path: Path, caplog: Any) -> None:
    async with slack_harness(tmp_path) as h:
        with caplog.at_level("INFO", logger="dialectic.slack.gate"):
            await _event(h, _dm(h, "Should we?"), T2)
        lines = [r for r in caplog.records if r.name == "dialectic.slack.gate"]
        assert len(lines) == 1 and T2 in lines[0].getMessage()
        assert "message" in lines[0].getMessage() and lines[0].exc_info is None


async def _reviewed(h: Harness) -> tuple[str, str, str]:
    """A debate of the installed workspace routed to review: (debate, review, request ts)."""
    await h.command("Should we rewrite the scheduler in Rust? --preset strict")
    debate = await h.one_debate()
    await h.wait_finished(debate.id)

    async def stored() -> Any:
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get_by_debate(session, debate.id)
        return review if review is not None and review.message_ts else None

    review = await h.wait_until(stored, what="the review message to be stored")
    return debate.id, review.id, review.message_ts


async def test_reviewers_decide_their_workspace_and_the_operator_reviews_only(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        debate_id, review_id, ts = await _reviewed(h)
        async with h.rt.db.transaction() as session:   # as if another workspace had started it
            record = await debates.get(session, debate_id)
            await debates.update_origin(session, debate_id,
                                        record.origin.model_copy(update={"team_id": T2}))
        await h.press(R.APPROVE_ACTION, review_id, user=REVIEWER, channel=REVIEW_CHANNEL,
                      message_ts=ts)
        said = await h.fake.wait_for("chat.postEphemeral")
        assert said.args["user"] == REVIEWER and "cannot find this review" in said.args["text"]
        press = {"type": "block_actions", "user": {"id": REVIEWER},
                 "trigger_id": h.next_id("trig."), "channel": {"id": REVIEW_CHANNEL},
                 "container": {"type": "message", "channel_id": REVIEW_CHANNEL,
                               "message_ts": ts},
                 "actions": [{"action_id": R.APPROVE_ACTION, "value": review_id,
                              "type": "button", "block_id": "review_actions"}]}
        for team in (T2, NOBODY):
            assert (await _interaction(h, press, team)).status == 200
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await reviews.get(session, review_id)).status is ReviewStatus.PENDING
        assert len(h.fake.calls_to("chat.postEphemeral")) == 1
        async with h.rt.db.transaction() as session:   # the operator's: its reviewers decide
            await debates.update_origin(session, debate_id, Origin(surface="api"))
        await h.press(R.APPROVE_ACTION, review_id, user=REVIEWER, channel=REVIEW_CHANNEL,
                      message_ts=ts)

        async def approved() -> bool:
            async with h.rt.db.transaction(readonly=True) as session:
                return (await reviews.get(session, review_id)).status is ReviewStatus.APPROVED

        assert await h.wait_until(approved, what="the approval")


async def test_the_operator_scheduled_posts_in_the_workspace_are_the_workspace_own(
        tmp_path: Path) -> None:
    """A digest or brief the operator's schedule posted in the installed workspace's channel
    unfurls and takes feedback there (and still not from a workspace that is not installed)."""
    async with slack_harness(tmp_path) as h:
        digest = await _finished_debate(h, "NVDA above its 50-day average?", Origin(
            surface="schedule", schedule_id="morning", channel_id=CHANNEL))
        await h.event(h.fake.share_link(CHANNEL, h.rt.url(digest), user=USER))
        unfurled = await h.fake.wait_for("chat.unfurl")
        assert [e["external_ref"]["id"] for e in unfurled.args["metadata"]["entities"]] == [
            digest]
        press = {"type": "block_actions", "user": {"id": USER},
                 "trigger_id": h.next_id("trig."), "channel": {"id": CHANNEL},
                 "container": {"type": "message", "channel_id": CHANNEL,
                               "message_ts": "1.000001"},
                 "actions": [{"action_id": F.FEEDBACK_ACTION, "value": f"down:{digest}",
                              "type": "feedback_buttons", "block_id": F.FEEDBACK_BLOCK}]}
        assert (await _interaction(h, {**press, "user": {"id": "UOTHER"}}, T2)).status == 200
        await h.interaction(press)
        stored = await h.wait_until(lambda: _stored(h, digest, USER), what="the thumb")
        assert (stored.team_id, stored.rating) == (TEAM, "down")
        assert await _stored(h, digest, "UOTHER") is None
