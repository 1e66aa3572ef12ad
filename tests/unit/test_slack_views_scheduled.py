"""What `/debate brief` and `/debate schedules` answer with: views, not blocks built in the
listener; hostile topics and ids escaped, Slack's limits kept."""

from __future__ import annotations

from datetime import timedelta

from bot.scheduling.reports import BriefPlan, ScheduleView
from bot.slack.mrkdwn import escape
from bot.slack.views.brief import brief_planned
from bot.slack.views.digest import schedule_list
from tests.support.slack_view_fixtures import HOSTILE, WHEN, assert_message_valid, text_of


def test_brief_planned_says_when_and_where() -> None:
    plan = BriefPlan(id="b1", topic=HOSTILE * 200, channel="C0BRIEF", requested_by="U1",
                     meeting_at=WHEN, start_at=WHEN - timedelta(minutes=30), status="planned")
    message = brief_planned(plan)
    assert_message_valid(message)
    text = text_of(message)
    assert len(message.blocks) == 1 and "Brief planned: *" + escape(HOSTILE) in text
    assert "<#C0BRIEF>" in text and text.count("<!date^") == 2


def view(id_: str, *, enabled: bool = True, paused: bool = False,
         channel: str = "C0DIGEST") -> ScheduleView:
    return ScheduleView(id=id_, cron="0 8 * * 1-5", timezone="Europe/Paris", channel=channel,
                        preset="market", enabled=enabled, paused=paused, next_fire=WHEN)


def test_schedule_list_states_and_next_firing() -> None:
    message = schedule_list([view("morning"), view("paused", paused=True),
                             view(HOSTILE, enabled=False, channel="#ops")])
    assert_message_valid(message)
    text = text_of(message)
    assert ("*morning* · `0 8 * * 1-5` Europe/Paris · market → <#C0DIGEST> · active · next "
            "<!date^") in text
    assert "*paused*" in text and "· paused · next —" in text
    assert f"*{escape(HOSTILE)}*" in text and "· disabled · next —" in text


def test_schedule_list_when_there_are_none_says_how_to_add_one() -> None:
    message = schedule_list([])
    assert_message_valid(message)
    assert "[[schedules]]" in message.text


def test_a_long_schedule_list_is_split_within_the_limits() -> None:
    assert_message_valid(schedule_list([view(f"s{i}") for i in range(40)]))
