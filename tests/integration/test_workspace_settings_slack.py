"""Two workspaces of one organisation (an org-wide install), each with its own settings, through
the real Bolt app and the fake Slack on loopback, every request signed: admins set a workspace's
daily budget, reviewers and review channel in the App Home modal (checked, one-line errors,
audited), others see them read-only and are refused; a workspace at its cap is refused while the
other is admitted, the operator's cap over both refuses both; each workspace's reviews go to its
own review channel and only its own reviewers decide them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bot.slack.views import review as R
from bot.slack.views.workspace_settings import FIELDS, SETTINGS_EDIT
from engine.domain import DebateRequest
from engine.settings import ModelPrice
from storage import audit, reviews
from storage import workspace_settings as store
from storage.records import ReviewStatus
from tests.support.slack_fixtures import (
    CHANNEL,
    REVIEW_CHANNEL,
    REVIEWER,
    STRICT,
    TEAM,
    Harness,
    Reply,
    slack_harness,
)

ORG, T2 = "E1", "T0SECOND"
ADMIN1, ADMIN2, MEMBER2, REVIEWER2 = "UADMINONE", "UADMINTWO", "UMEMBERTWO", "UREVIEWTWO"
CHANNEL2, REVIEWS2 = "CTWOGENERAL", "CTWOREVIEWS"
PRICED = {"rehearsal": ModelPrice(input=1000.0, output=1000.0)}


def _org(h: Harness) -> None:
    """Installed org-wide: both workspaces of the organisation are the app's."""
    h.fake.enterprise_id, h.fake.enterprise_install = ORG, True
    h.fake.add_user(ADMIN1, is_admin=True)
    h.fake.add_user(ADMIN2, is_admin=True, team_id=T2)
    h.fake.add_user(MEMBER2, team_id=T2)
    h.fake.add_user(REVIEWER2, team_id=T2)


async def _interaction(h: Harness, payload: dict[str, Any], team: str) -> Reply:
    payload = {"api_app_id": "A0FAKE", "token": "legacy", "team": {"id": team,
               "enterprise_id": ORG}, "enterprise": {"id": ORG}, **payload}
    return await h.send(urlencode({"payload": json.dumps(payload)}),
                        "application/x-www-form-urlencoded")


async def _command(h: Harness, text: str, team: str, user: str, channel: str) -> Reply:
    fields = dict(pair.split("=", 1) for pair in h.command_body(text, user=user,
                                                                channel=channel).split("&"))
    fields.update(team_id=team, enterprise_id=ORG)
    return await h.send("&".join(f"{k}={v}" for k, v in fields.items()),
                        "application/x-www-form-urlencoded")


async def _open_home(h: Harness, user: str, team: str) -> dict[str, Any]:
    before = len(h.fake.calls_to("views.publish"))
    body = h.event_body({"type": "app_home_opened", "user": user, "tab": "home",
                         "channel": "D0HOME"}, event_id=h.next_id("EvHome"))
    body["team_id"], body["enterprise_id"] = team, ORG
    body["authorizations"] = [{"team_id": team, "enterprise_id": ORG, "is_bot": True,
                               "user_id": h.fake.bot_user_id, "is_enterprise_install": True}]
    await h.send(json.dumps(body), "application/json")

    def published() -> list[dict[str, Any]]:
        return [c.args["view"] for c in h.fake.calls_to("views.publish")[before:]
                if c.args["user_id"] == user]

    views: list[dict[str, Any]] = await h.wait_until(published, what="the Home tab")
    return views[0]


def _edit_buttons(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]
            if e.get("action_id") == SETTINGS_EDIT]


async def _edit(h: Harness, user: str, team: str) -> dict[str, Any] | None:
    """Press Edit settings on App Home; the modal Slack was asked to open, if any."""
    before, refusals = len(h.fake.calls_to("views.open")), len(await _refusals(h))
    await _interaction(h, {"type": "block_actions", "user": {"id": user},
                           "trigger_id": h.next_id("trig."), "container": {"type": "view"},
                           "actions": [{"action_id": SETTINGS_EDIT, "value": team,
                                        "type": "button", "block_id": "b"}]}, team)

    def opened() -> list[dict[str, Any]]:
        return [c.args["view"] for c in h.fake.calls_to("views.open")[before:]]

    async def answered() -> bool:
        return bool(opened()) or len(await _refusals(h)) > refusals

    await h.wait_until(answered, what="the modal or the refusal")
    return opened()[0] if opened() else None


async def _refusals(h: Harness) -> list[str]:
    async with h.rt.db.transaction(readonly=True) as session:
        return [e.actor for e in await audit.events(session, None)
                if e.kind == "workspace_settings_refused"]


async def _save(h: Harness, modal: dict[str, Any], user: str, team: str,
                **fields: str) -> dict[str, Any]:
    values = {FIELDS[f][0]: {FIELDS[f][1]: {"type": "plain_text_input", "value": v}}
              for f, v in fields.items()}
    reply = await _interaction(h, {"type": "view_submission", "user": {"id": user},
                                   "trigger_id": h.next_id("trig."),
                                   "view": {**modal, "state": {"values": values}}}, team)
    return reply.json() if reply.text else {}


async def _admin_sets(h: Harness, user: str, team: str, **fields: str) -> None:
    modal = await _edit(h, user, team)
    assert modal is not None, "an admin's press opens the settings modal"
    assert await _save(h, modal, user, team, **fields) == {}


async def _one_high(h: Harness) -> float:
    return (await h.rt.service.estimate(DebateRequest(topic="Should we do it?", mode="simple"))
            ).usd_high


async def _status(h: Harness, channel: str, n: int) -> str:
    """The text the n-th /debate status message in `channel` ends with."""
    def updated() -> list[str]:
        return [json.dumps(c.args) for c in h.fake.calls_to("chat.update")
                if c.args.get("channel") == channel]
    texts = await h.wait_until(lambda: len(updated()) >= n and updated(), what="the status")
    return texts[n - 1]


async def test_admins_set_caps_in_the_modal_and_each_workspace_is_held_to_its_own(
        tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0, prices=PRICED,
                             daily_budget_usd=1000.0) as h:
        _org(h)
        one = await _one_high(h)
        # a member sees the values read-only; pressing Edit anyway opens nothing
        home = await _open_home(h, MEMBER2, T2)
        assert _edit_buttons(home) == []
        assert "Only this workspace's admins and owners" in json.dumps(home)
        assert await _edit(h, MEMBER2, T2) is None
        # an admin's form: bad values are one line beside their field, nothing saved
        assert _edit_buttons(await _open_home(h, ADMIN2, T2))
        modal = await _edit(h, ADMIN2, T2)
        assert modal is not None
        for field, value, error in (
                ("daily_budget_usd", "-1", "give a positive amount"),
                ("daily_budget_usd", "5000", "at most the operator's daily budget of $1,000.00"),
                ("review_channel", "general", "is no Slack channel id"),
                ("reviewers", "bob", "'bob' is no Slack user id"),
                ("thresholds", "nosuch high=0.9", "no preset 'nosuch'")):
            answer = await _save(h, modal, ADMIN2, T2, **{field: value})
            assert answer["response_action"] == "errors"
            assert error in answer["errors"][FIELDS[field][0]]
        h.fake.channel_error("CGONE", "channel_not_found")
        answer = await _save(h, modal, ADMIN2, T2, review_channel="CGONE")
        assert "Slack knows no channel CGONE" in answer["errors"][FIELDS["review_channel"][0]]
        # a member who submits the form (forged) is refused the same way
        answer = await _save(h, modal, MEMBER2, T2, daily_budget_usd="1")
        assert "Only this workspace's admins" in answer["errors"][FIELDS["daily_budget_usd"][0]]
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await store.get(session, T2)).daily_budget_usd is None
        assert await _refusals(h) == [MEMBER2, MEMBER2]
        await _admin_sets(h, ADMIN2, T2, daily_budget_usd=f"{one * 2.5:.6f}")
        await _admin_sets(h, ADMIN1, TEAM, daily_budget_usd=f"{one * 1.5:.6f}")
        shown = json.dumps(await _open_home(h, MEMBER2, T2))
        assert "this workspace's" in shown and "This workspace's daily cap" in shown
        # the home workspace at its cap is refused, the other admitted, both ways
        await _command(h, "Should we do it? --mode simple", TEAM, ADMIN1, CHANNEL)
        assert "Debate started" in await _status(h, CHANNEL, 1)
        await _command(h, "Should we do it again? --mode simple", TEAM, ADMIN1, CHANNEL)
        refused = await _status(h, CHANNEL, 2)
        assert "this workspace's daily budget has $" in refused
        for n in (1, 2):
            await _command(h, f"Should we try {n}? --mode simple", T2, MEMBER2, CHANNEL2)
            assert "Debate started" in await _status(h, CHANNEL2, n)
        await _command(h, "Should we try 3? --mode simple", T2, MEMBER2, CHANNEL2)
        assert "this workspace's daily budget has $" in await _status(h, CHANNEL2, 3)
        teams = sorted(d.origin.team_id or "" for d in await h.debates())
        assert teams == [TEAM, T2, T2]
        async with h.rt.db.transaction(readonly=True) as session:
            kinds = [e for e in await audit.events(session, None)
                     if e.kind == "workspace_settings_changed"]
        assert [(e.actor, e.data["team_id"]) for e in kinds] == [(ADMIN2, T2), (ADMIN1, TEAM)]


async def test_the_operators_cap_over_all_workspaces_refuses_both(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, workers=0, prices=PRICED) as probe:
        one = await _one_high(probe)
    async with slack_harness(tmp_path / "b", workers=0, prices=PRICED,
                             daily_budget_usd=round(one * 2.5, 6)) as h:
        _org(h)
        await _admin_sets(h, ADMIN1, TEAM, daily_budget_usd=f"{one * 2.2:.6f}")
        await _admin_sets(h, ADMIN2, T2, daily_budget_usd=f"{one * 2.2:.6f}")
        await _command(h, "Should we do it? --mode simple", TEAM, ADMIN1, CHANNEL)
        await _command(h, "Should we do it? --mode simple", T2, MEMBER2, CHANNEL2)
        assert "Debate started" in await _status(h, CHANNEL, 1)
        assert "Debate started" in await _status(h, CHANNEL2, 1)
        await _command(h, "Should we do more? --mode simple", TEAM, ADMIN1, CHANNEL)
        await _command(h, "Should we do more? --mode simple", T2, MEMBER2, CHANNEL2)
        for channel in (CHANNEL, CHANNEL2):   # each has room under its own, not the total
            assert "today's budget over all workspaces has $" in await _status(h, channel, 2)
        assert len(await h.debates()) == 2


async def _reviewed(h: Harness, team: str, user: str, channel: str, topic: str
                    ) -> tuple[str, str, str]:
    """A debate of `team` routed to review: (review id, its channel, its message ts)."""
    await _command(h, f"{topic} --preset strict --mode consensus", team, user, channel)

    async def stored() -> Any:
        found = [d for d in await h.debates() if d.request.topic == topic]
        if not found:
            return None
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get_by_debate(session, found[0].id)
        return review if review is not None and review.message_ts else None

    review = await h.wait_until(stored, what="the review request to be posted")
    return review.id, review.channel_id, review.message_ts


async def _press(h: Harness, review_id: str, user: str, team: str, channel: str,
                 ts: str) -> None:
    await _interaction(h, {
        "type": "block_actions", "user": {"id": user}, "trigger_id": h.next_id("trig."),
        "container": {"type": "message", "channel_id": channel, "message_ts": ts},
        "channel": {"id": channel}, "message": {"ts": ts},
        "response_url": h.fake.response_url(h.next_id("resp")),
        "actions": [{"action_id": R.APPROVE_ACTION, "value": review_id, "type": "button",
                     "block_id": "review_actions"}]}, team)


async def _status_of(h: Harness, review_id: str) -> ReviewStatus:
    async with h.rt.db.transaction(readonly=True) as session:
        return (await reviews.get(session, review_id)).status


async def test_reviews_go_to_the_workspaces_channel_and_its_reviewers(tmp_path: Path) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        _org(h)
        await _admin_sets(h, ADMIN2, T2, reviewers=f"<@{REVIEWER2}>", review_channel=REVIEWS2,
                          thresholds="strict escalate=0.0 high=1.0")
        async with h.rt.db.transaction(readonly=True) as session:
            assert (await store.get(session, T2)).thresholds == {
                "strict": {"escalate": 0.0, "high": 1.0}}
        two, where2, ts2 = await _reviewed(h, T2, MEMBER2, CHANNEL2, "Should team two fork?")
        one, where1, ts1 = await _reviewed(h, TEAM, ADMIN1, CHANNEL, "Should team one fork?")
        assert (where2, where1) == (REVIEWS2, REVIEW_CHANNEL)
        # the operator's reviewer cannot decide the second workspace's review, nor its own
        # reviewer the first's
        await _press(h, two, REVIEWER, T2, REVIEWS2, ts2)
        await _press(h, one, REVIEWER2, TEAM, REVIEW_CHANNEL, ts1)
        await h.wait_until(lambda: len(h.fake.calls_to("chat.postEphemeral")) >= 2,
                           what="two refusals")
        assert {c.args["user"] for c in h.fake.calls_to("chat.postEphemeral")} == {
            REVIEWER, REVIEWER2}
        assert await _status_of(h, two) is ReviewStatus.PENDING
        assert await _status_of(h, one) is ReviewStatus.PENDING
        await _press(h, two, REVIEWER2, T2, REVIEWS2, ts2)
        await _press(h, one, REVIEWER, TEAM, REVIEW_CHANNEL, ts1)

        async def decided() -> bool:
            return {await _status_of(h, two), await _status_of(h, one)} == {
                ReviewStatus.APPROVED}

        await h.wait_until(decided, what="both approvals")
