"""The `/debate` modal, today's budget and the App Home tab."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.models.views import View

from bot.service.oversight import JudgeReport
from bot.slack.views import budget as G
from bot.slack.views import home as H
from bot.slack.views import modals as M
from engine.oversight.judge_audit import AuditPolicy, audit_judges
from engine.vocabulary import MAX_JUDGES, MAX_TOPIC_CHARS
from storage.records import DebateStatus
from tests.support.audit_fixtures import START, SyntheticJudge, history
from tests.support.slack_view_fixtures import (
    TRANSCRIPT,
    assert_blocks_valid,
    assert_message_valid,
    assert_no_raw_markup,
    consensus_result,
    record_for,
    rehearsal_result,
    review_for,
    text_of,
)


def test_debate_modal() -> None:
    view = M.debate_modal(["default", "fast"], ["simple", "consensus"], "C0123")
    assert View(**view).to_dict() == view
    assert view["callback_id"] == "debate_modal" and view["private_metadata"] == "C0123"
    inputs = {b["block_id"]: b["element"] for b in view["blocks"]}
    assert inputs["topic"]["max_length"] == MAX_TOPIC_CHARS and inputs["topic"]["multiline"]
    assert inputs["topic"]["action_id"] == "topic_input"
    assert inputs["mode"]["initial_option"]["value"] == "consensus"
    assert inputs["preset"]["initial_option"]["value"] == "default"
    # every panel size the parser accepts, but one: a lone judge cannot disagree with anyone
    assert [o["value"] for o in inputs["judges"]["options"]] == [
        str(n) for n in range(2, MAX_JUDGES + 1)]
    assert inputs["judges"]["initial_option"]["value"] == "3"
    assert {e["type"] for e in inputs.values()} == {"plain_text_input", "static_select"}


def test_debate_modal_without_presets() -> None:
    view = M.debate_modal([], ["simple"], "C1")
    assert {b["block_id"] for b in view["blocks"]} == {"topic", "mode", "judges"}



@pytest.mark.parametrize(("state", "expected"), [
    ({"spent_usd": 2.5, "cap_usd": 10.0, "reserved_usd": 0.5}, ["$2.50", "$10.00", "$7.00",
                                                                "30% of today's cap"]),
    ({"spent_usd": 9.0, "cap_usd": 10.0, "reserved_usd": 1.5}, ["⛔ The cap is reached"]),
    ({"spent_usd": 8.5, "cap_usd": 10.0}, ["⚠ Over 80%"]),
    ({"spent_usd": 1, "remaining_usd": 4, "cap_usd": None}, ["*Daily cap*\\nnone", "$4.00"]),
    ({}, ["$0.00", "*Remaining*\\nn/a"]),
])
def test_budget(state: dict[str, Any], expected: list[str]) -> None:
    message = G.budget(state)
    assert_message_valid(message)
    for part in expected:
        assert part in text_of(message)


def test_app_home_for_a_reviewer() -> None:
    recent = [record_for(consensus_result(), status=DebateStatus.AWAITING_REVIEW)]
    view = H.app_home(recent, {"spent_usd": 1.0, "cap_usd": 10.0}, [review_for()],
                      is_reviewer=True, public_url="https://dialectic.example.com/")
    assert view["type"] == "home" and View(**view).to_dict() == view
    assert_blocks_valid(view["blocks"], max_blocks=100, max_chars=None)
    assert_no_raw_markup(view)
    text = text_of(view)
    assert "Waiting for review (1)" in text and "<#C1>" in text
    assert f"<{TRANSCRIPT}|transcript>" in text
    assert "⚠ incomplete" in text and "👀 Awaiting review" in text


def test_app_home_for_others_is_capped_at_100_blocks() -> None:
    recent = [record_for(rehearsal_result(), id=f"d-{i}") for i in range(150)]
    view = H.app_home(recent, {}, [review_for()] * 3, is_reviewer=False,
                      public_url="https://dialectic.example.com")
    assert_blocks_valid(view["blocks"], max_blocks=100, max_chars=None)
    text = text_of(view)
    assert "Waiting for review" not in text and "3 debate(s) wait for a reviewer" in text
    assert "🧪 rehearsal" in text and "truncated" in text


def test_app_home_empty() -> None:
    view = H.app_home([], {}, [], is_reviewer=True, public_url="")
    assert "No debates yet" in text_of(view)




def _report(judges: list[SyntheticJudge], debates: int = 240) -> JudgeReport:
    panels = history(judges, seed=41, debates=debates)
    return JudgeReport(days=90, since=START, presets=(), debates=len(panels),
                       labelled=sum(p.review is not None for p in panels),
                       policy=AuditPolicy(), judges=audit_judges(panels))


def test_the_home_tab_has_a_line_of_the_judge_audit() -> None:
    report = _report([SyntheticJudge(name="technical"),
                      SyntheticJudge(name="risk<!here>", habit="first"),
                      SyntheticJudge(name="business", habit="harsh"),
                      SyntheticJudge(name="general")])
    view = H.app_home([], {}, [], is_reviewer=False, public_url="https://d.example/",
                      judges=report)
    assert_blocks_valid(view["blocks"], max_blocks=100, max_chars=None)
    assert_no_raw_markup(view)
    text = text_of(view)
    assert "Judge audit, last 90 days* (240 debates): ⚑" in text
    assert "risk&lt;!here&gt; (gpt-4o-mini): position bias 100% vs" in text
    assert "business (gpt-4o-mini): leniency -1." in text and "(n=240)" in text
    assert "technical" not in text and "<https://d.example/judges|judges>" in text


@pytest.mark.parametrize(("report", "said"), [
    (None, "no judged debates in the last 90 days yet"),
    ("fair", "no judge flagged"),
])
def test_the_judge_audit_line_without_flags(report: str | None, said: str) -> None:
    found = _report([SyntheticJudge(name=n) for n in ("a", "b", "c")]) if report else None
    line = H.judge_audit_line(found, "https://d.example/judges")
    assert_blocks_valid([line])
    assert said in text_of([line])
