"""A workspace's schedules from App Home, in multi-workspace mode through the real Bolt app and the
fake Slack, every request signed and answered with the workspace's own token: a member sees them
read-only and is refused (in a modal only they see, audited); an admin's bad values are one line
beside the field and nothing is saved; an admin's schedule runs at its slot (the scheduler's clock
set by the test) and posts its digest with that workspace's token; another workspace's admin
neither sees nor touches it; an uninstalled workspace's slot is skipped with the reason, and runs
again once reinstalled; Pause and Remove take effect."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bot.scheduling.scheduler import Scheduler
from bot.scheduling.workspace import CONFIG_PREFIX
from bot.slack.publisher import SlackPublisher
from bot.slack.views.workspace_schedules import (
    FIELDS,
    NOTICE_MODAL,
    SCHEDULE_ADD,
    SCHEDULE_EDIT,
    SCHEDULE_MODAL,
    SCHEDULE_PAUSE,
    SCHEDULE_REMOVE,
)
from storage import audit
from storage import workspace_schedules as store
from storage.records import RunStatus
from tests.fakes.slack_installs import Install
from tests.integration.test_slack_install import home_opened, install, multi, rows
from tests.support.slack_fixtures import Harness

T1, T2 = "T1ONE", "T2TWO"
ADMIN1, ADMIN2, MEMBER2 = "UADMINONE", "UADMINTWO", "UMEMBERTWO"
CHANNEL2 = "CTWOMARKETS"
GOOD = {"name": "morning", "preset": "market", "cron": "0 8 * * 1-5",
        "timezone": "Europe/Paris", "channel": CHANNEL2,
        "topics": "Brent crude breaks $90\nThe ECB cuts rates in June"}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2024, 5, 6, 6, 0, 4, tzinfo=UTC)     # Monday 08:00:04 in Paris

    def __call__(self) -> datetime:
        return self.now


async def _home(h: Harness, team: str, user: str) -> dict[str, Any]:
    before = len(h.fake.calls_to("views.publish"))
    body = json.loads(home_opened(team, user))
    body["event_id"] = h.next_id("EvHome")
    await h.send(json.dumps(body), "application/json")

    def published() -> list[dict[str, Any]]:
        return [c.args["view"] for c in h.fake.calls_to("views.publish")[before:]
                if c.args["user_id"] == user]

    views: list[dict[str, Any]] = await h.wait_until(published, what="the Home tab")
    return views[-1]


async def _interaction(h: Harness, team: str, payload: dict[str, Any]) -> dict[str, Any]:
    payload = {"api_app_id": "A0FAKE", "token": "legacy", "team": {"id": team}, **payload}
    reply = await h.send(urlencode({"payload": json.dumps(payload)}),
                         "application/x-www-form-urlencoded")
    assert reply.status == 200, reply.text
    return reply.json() if reply.text else {}


async def _press(h: Harness, team: str, user: str, action: str, value: str = "add"
                 ) -> dict[str, Any]:
    """Press a button of the Schedules section; the modal Slack was asked to open."""
    before = len(h.fake.calls_to("views.open"))
    await _interaction(h, team, {"type": "block_actions", "user": {"id": user},
                                 "trigger_id": h.next_id("trig."), "container": {"type": "view"},
                                 "actions": [{"action_id": action, "value": value,
                                              "type": "button", "block_id": "b"}]})
    opened = await h.wait_until(lambda: h.fake.calls_to("views.open")[before:],
                                what="a modal")
    assert opened[0].team == team              # with the workspace's own token
    view: dict[str, Any] = opened[0].args["view"]
    return view


async def _submit(h: Harness, team: str, user: str, modal: dict[str, Any],
                  **fields: str) -> dict[str, Any]:
    values = {}
    for field, value in fields.items():
        block, action = FIELDS[field]
        given = ({"type": "static_select", "selected_option": {"value": value}}
                 if field == "preset" else {"type": "plain_text_input", "value": value})
        values[block] = {action: given}
    return await _interaction(h, team, {"type": "view_submission", "user": {"id": user},
                                        "trigger_id": h.next_id("trig."),
                                        "view": {**modal, "state": {"values": values}}})


async def _schedules(h: Harness, team: str) -> list[store.WorkspaceSchedule]:
    async with h.rt.db.transaction(readonly=True) as session:
        return await store.list_for(session, team)


def _buttons(view: dict[str, Any]) -> list[str]:
    return [e.get("action_id", "") for b in view["blocks"] if b["type"] == "actions"
            for e in b["elements"]]


def _digests(h: Harness) -> list[Any]:
    return [c for c in h.fake.calls_to("chat.postMessage")
            if c.args.get("channel") == CHANNEL2 and not c.args.get("thread_ts")]


async def test_a_workspaces_admin_schedules_a_digest_that_runs_in_that_workspace(
        tmp_path: Path) -> None:
    async with multi(tmp_path, workers=None) as h:
        for team in (T1, T2):
            await install(h, Install(team))
        h.fake.add_user(ADMIN1, is_admin=True, team_id=T1)
        h.fake.add_user(ADMIN2, is_owner=True, team_id=T2)
        h.fake.add_user(MEMBER2, team_id=T2)
        h.fake.channel_error("CNOPE", "channel_not_found")

        # a member: read-only, and a press anyway is refused to them alone, and audited
        home = await _home(h, T2, MEMBER2)
        assert "Schedules" in json.dumps(home) and SCHEDULE_ADD not in _buttons(home)
        notice = await _press(h, T2, MEMBER2, SCHEDULE_ADD)
        assert notice["callback_id"] == NOTICE_MODAL and "admins and owners" in json.dumps(notice)
        async with h.rt.db.transaction(readonly=True) as session:
            refused = [e for e in await audit.events(session, None)
                       if e.kind == "workspace_schedule_refused"]
        assert [(e.actor, e.data["team_id"]) for e in refused] == [(MEMBER2, T2)]

        # the admin: bad values are one line beside their field, nothing saved
        assert SCHEDULE_ADD in _buttons(await _home(h, T2, ADMIN2))
        modal = await _press(h, T2, ADMIN2, SCHEDULE_ADD)
        assert modal["callback_id"] == SCHEDULE_MODAL
        for bad, block, words in ((("cron", "*/10 * * * *"), "wss_cron", "at most once an hour"),
                                  (("channel", "CNOPE"), "wss_channel", "shows me no channel"),
                                  (("topics", "\u200b\n \u2060"), "wss_topics", "topics: "),
                                  (("timezone", "Moon/Base"), "wss_timezone", "unknown time zone"),
                                  (("preset", "nope"), "wss_preset", "no preset 'nope'")):
            answer = await _submit(h, T2, ADMIN2, modal, **{**GOOD, bad[0]: bad[1]})
            assert answer["response_action"] == "errors" and words in answer["errors"][block]
        assert await _schedules(h, T2) == []
        assert await _submit(h, T2, ADMIN2, modal, **GOOD) == {}
        (saved,) = await _schedules(h, T2)
        home = await _home(h, T2, ADMIN2)
        assert "morning" in json.dumps(home) and "next run" in json.dumps(home)
        edit = await _press(h, T2, ADMIN2, SCHEDULE_EDIT, saved.id)
        assert edit["private_metadata"] == saved.id and "Brent crude" in json.dumps(edit)
        assert await _submit(h, T2, ADMIN2, edit, **{**GOOD, "topics": "Brent crude breaks $90\n"
                                                     "Copper at a record"}) == {}
        (saved,) = await _schedules(h, T2)
        assert saved.topics == ("Brent crude breaks $90", "Copper at a record")

        # another workspace's admin: not shown, and a press naming it finds nothing
        other = await _home(h, T1, ADMIN1)
        assert "morning" not in json.dumps(other)
        gone = await _press(h, T1, ADMIN1, SCHEDULE_PAUSE, saved.id)
        assert "not there any more" in json.dumps(gone)
        assert (await _schedules(h, T2))[0].enabled is True

        # it runs at its slot, in its channel, with its workspace's token
        clock = Clock()
        scheduler = Scheduler(h.rt, h.parts.scheduler.settings, clock=clock, wait_timeout=30.0,
                              publisher=SlackPublisher(h.notifier))
        await scheduler.sync_workspaces()
        ran = await scheduler.fire(CONFIG_PREFIX + saved.id)
        assert ran is not None and ran.status == RunStatus.DONE and len(ran.debate_ids) == 2
        assert [c.team for c in _digests(h)] == [T2]
        for debate_id in ran.debate_ids:
            assert (await h.rt.service.get(debate_id)).origin.team_id == T2
        # its debates are listed in its App Home's recent debates, not in the other workspace's
        assert "*Copper at a record*" in json.dumps(await _home(h, T2, MEMBER2))
        assert "Copper" not in json.dumps(await _home(h, T1, ADMIN1))

        # uninstalled: the slot is skipped with the reason; reinstalled: it runs again
        uninstall = json.loads(home_opened(T2))
        uninstall["event"], uninstall["event_id"] = {"type": "app_uninstalled"}, "EvGone"
        await h.send(json.dumps(uninstall), "application/json")

        async def uninstalled() -> bool:
            return T2 not in {r["team_id"] for r in await rows(h, "slack_bots")}

        await h.wait_until(uninstalled, what="T2 uninstalled")
        clock.now = datetime(2024, 5, 7, 6, 0, 4, tzinfo=UTC)
        skipped = await scheduler.fire(CONFIG_PREFIX + saved.id)
        assert skipped is not None and skipped.status == RunStatus.SKIPPED
        assert "has not installed the app" in skipped.error and len(_digests(h)) == 1
        await install(h, Install(T2))
        clock.now = datetime(2024, 5, 8, 6, 0, 4, tzinfo=UTC)
        again = await scheduler.fire(CONFIG_PREFIX + saved.id)
        assert again is not None and again.status == RunStatus.DONE and len(_digests(h)) == 2
        assert again.digest is not None and [p for p in again.digest.earlier_problems
                                             if "skipped" in p and "not installed" in p]

        # Pause, then Remove, from App Home
        before = len(h.fake.calls_to("views.publish"))
        await _interaction(h, T2, {"type": "block_actions", "user": {"id": ADMIN2},
                                   "trigger_id": h.next_id("trig."),
                                   "container": {"type": "view"},
                                   "actions": [{"action_id": SCHEDULE_PAUSE, "value": saved.id,
                                                "type": "button", "block_id": "b"}]})
        await h.wait_until(lambda: len(h.fake.calls_to("views.publish")) > before,
                           what="the Home tab again")
        assert (await _schedules(h, T2))[0].enabled is False
        assert "paused" in json.dumps(h.fake.calls_to("views.publish")[-1].args["view"])
        clock.now = datetime(2024, 5, 9, 6, 0, 4, tzinfo=UTC)
        paused = await scheduler.fire(CONFIG_PREFIX + saved.id)
        assert paused is not None and paused.status == RunStatus.PAUSED
        await _interaction(h, T2, {"type": "block_actions", "user": {"id": ADMIN2},
                                   "trigger_id": h.next_id("trig."),
                                   "container": {"type": "view"},
                                   "actions": [{"action_id": SCHEDULE_REMOVE, "value": saved.id,
                                                "type": "button", "block_id": "b"}]})

        async def removed() -> bool:
            return await _schedules(h, T2) == []

        await h.wait_until(removed, what="the schedule removed")
        scheduler.shutdown()
        async with h.rt.db.transaction(readonly=True) as session:
            kinds = [(e.kind, e.actor) for e in await audit.events(session, None)
                     if e.kind.startswith("workspace_schedule_")]
    assert kinds == [("workspace_schedule_refused", MEMBER2),
                     ("workspace_schedule_added", ADMIN2),
                     ("workspace_schedule_changed", ADMIN2),
                     ("workspace_schedule_changed", ADMIN2),
                     ("workspace_schedule_removed", ADMIN2)]
