"""Block Kit rendering and mrkdwn helpers: Slack's limits, escaping of hostile text, content.

Every renderer runs over realistic results built from `engine.domain` models (a contested
consensus with degraded steps, simple and structured modes, a rehearsal, a huge result, hostile
text) and every message is checked the way Slack would: blocks parse with `slack_sdk.models`,
round-trip through `to_dict`, and stay within the per-block and per-message limits.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.slack.mrkdwn import channel, chunk, date_fmt, escape, link, safe_cut, truncate, user
from bot.slack.views import common as B
from engine.domain import (
    ConsensusSummary,
    CostBreakdown,
    DebateRequest,
    DebateResult,
    DivergencePoint,
    DivergenceSummary,
    Estimate,
    Evidence,
    PhaseSummary,
    TraceRow,
)
from engine.outcomes import RedTeamOutcome, StructuredOutcome
from engine.schemas.procon import RubricScores
from engine.schemas.redteam import (
    Analysis,
    Decision,
    RedTeamChallenge,
    Revision,
    StrategyProposal,
)
from engine.vocabulary import Side
from storage.records import DebateRecord, DebateStatus, Origin, Review, ReviewStatus

HOSTILE = "<!channel> <@U123> & <https://evil|click>"
RAW_MARKUP = ("<!channel>", "<@U123>", "<https://evil", "<!here>")
TRANSCRIPT = "https://dialectic.example.com/debates/d-1"
THREAD = "https://fake.slack.com/archives/C1/p1700000000000100"
WHEN = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)

# --------------------------------------------------------------------------------------------
# fixtures: results, records, reviews


def consensus_result(**overrides: Any) -> DebateResult:
    """A contested panel: alpha 0.42, irreconcilable, a degraded judge and a filtered step."""
    consensus = ConsensusSummary(
        alpha=0.42, alpha_interval=(0.18, 0.61), kappa=0.31, band="review",
        routing="human_review", irreconcilable=True, judges=["judge-a", "judge-b", "judge-c"],
        items=["pro.logic", "pro.evidence", "con.logic", "con.evidence"],
        weighted_scores={"pro.logic": 7.0, "pro.evidence": 6.0, "con.logic": 5.0,
                         "con.evidence": None, "claim.p1": 8.0},
        weights={"judge-a": 1.0, "judge-b": 1.0, "judge-c": 0.5},
    )
    points = [DivergencePoint(item=f"pro.d{i}", label=f"For · dimension {i}", mean=7.0 + i / 10,
                              spread=0.2 * i, ratings={"judge-a": 7.0, "judge-b": 7.5})
              for i in range(7)]
    values: dict[str, Any] = dict(
        id="d-1", status="completed", mode="consensus", topic="Should we adopt a 4-day week?",
        preset="default", verdict="For the proposition wins: 6.5 for vs 5.0 against.",
        winner="pro", rationale="judge-a: the productivity evidence was stronger.",
        consensus=consensus,
        divergence=DivergenceSummary(agreements=points[:6], disagreements=points[1:6]),
        degraded=[{"key": "consensus/judge/2", "role": "judge/2", "phase": "judging",
                   "reason": "invalid JSON after 3 attempts"}],
        filtered=["procon/con/rebuttal"],
        missing=["consensus/judge/2: degraded (invalid JSON after 3 attempts)",
                 "procon/con/rebuttal: withheld by the content filter"],
        complete=False, routing="human_review",
        cost=CostBreakdown(usd=0.0734, prompt_tokens=41_000, completion_tokens=9_500, calls=14,
                           reused_calls=2),
        elapsed_seconds=83.4,
        evidence=[Evidence(author="U1", text="a study")],
    )
    values.update(overrides)
    return DebateResult(**values)


def clean_result() -> DebateResult:
    return consensus_result(degraded=[], filtered=[], missing=[], complete=True)


def simple_result() -> DebateResult:
    return DebateResult(id="d-2", status="completed", mode="simple", topic="Is tabs better?",
                        verdict="Spaces, narrowly.", rationale="Consistency across editors.\n" * 3,
                        cost=CostBreakdown(usd=0.002, calls=3), elapsed_seconds=4.2)


def structured_result() -> DebateResult:
    scores = RubricScores(logic=7, evidence=6, rebuttal=5, clarity=8, relevance=9)
    outcome = StructuredOutcome(rubric={Side.PRO: scores, Side.CON: scores})
    return DebateResult(id="d-3", status="completed", mode="structured", topic="Monorepo?",
                        verdict="Too close to call.", winner="tie", outcome=outcome,
                        cost=CostBreakdown(usd=0.01, calls=7))


def rehearsal_result() -> DebateResult:
    return consensus_result(id="d-4", rehearsal=True, degraded=[], filtered=[], missing=[],
                            complete=True, cost=CostBreakdown(calls=14))


def timed_out_result() -> DebateResult:
    return DebateResult(id="d-5", status="timed_out", mode="critique", topic="Rewrite in Rust?",
                        verdict="", complete=True,
                        error="the debate was stopped at its hard deadline")


def mode_outcome_result() -> DebateResult:
    """A redteam outcome (seven fields) with hostile text wherever the models write."""
    text, pair = HOSTILE, {"name": HOSTILE, "value": "x" * 50}
    proposal = {"action": text, "rationale": text, "expected_outcome": text, "confidence": 0.6}
    outcome = RedTeamOutcome(
        analysis=Analysis.model_validate({
            "summary": text, "metrics": [pair], "confidence": 0.7,
            "factors": [{"factor": text, "effect": "supports", "weight": 7}]}),
        proposal=StrategyProposal.model_validate(proposal),
        challenge=RedTeamChallenge.model_validate({
            "summary": text, "counter_arguments": [text], "severity": "high",
            "risks": [{"risk": text, "likelihood": "high", "impact": "medium"}]}),
        revision=Revision.model_validate({**proposal, "changes": [text],
                                          "accepted_risks": [text]}),
        synthesis=Decision.model_validate({
            "decision": text, "rationale": text, "mitigation_steps": [text],
            "execution_parameters": [pair], "consensus_reached": False, "confidence": 0.5}),
        severity="high", consensus_reached=False,
    )
    return DebateResult(id="d-6", status="completed", mode="redteam", topic="Ship it?",
                        verdict="Three attacks landed.", outcome=outcome)


def huge_result() -> DebateResult:
    """50 claims of 2,000 characters, and hostile text in every field a model can fill."""
    big = (HOSTILE + " lorem ipsum dolor sit amet & more ") * 60
    rows = [TraceRow(id=f"p{i}", side="pro" if i % 2 else "con", claim=big[:2000],
                     evidence=big[:2000], challenge=big[:2000]) for i in range(50)]
    points = [DivergencePoint(item=f"claim.p{i}", label=big[:2000], mean=5.0, spread=3.0,
                              ratings={HOSTILE: 1.0, "judge-b": 9.0}) for i in range(20)]
    phases = [PhaseSummary(name=f"round{i}", highlights={"pro": big, "con": big})
              for i in range(10)]
    return consensus_result(
        id="d-huge", topic=big[:4000], verdict=big[:2000], rationale=big * 20,
        trace_table=rows, phases=phases,
        divergence=DivergenceSummary(agreements=points, disagreements=points),
        degraded=[{"key": f"k{i}", "role": "judge", "phase": "judging", "reason": big[:500]}
                  for i in range(50)],
        filtered=[big[:100]] * 30, missing=[big[:2000]] * 50, error=big[:1000],
    )


RESULTS = {
    "consensus": consensus_result,
    "clean": clean_result,
    "simple": simple_result,
    "structured": structured_result,
    "rehearsal": rehearsal_result,
    "timed_out": timed_out_result,
    "outcome": mode_outcome_result,
    "huge": huge_result,
}


def record_for(result: DebateResult | None = None, *, topic: str = HOSTILE,
               status: DebateStatus = DebateStatus.DEBATING, **overrides: Any) -> DebateRecord:
    values: dict[str, Any] = dict(
        id="d-1", request=DebateRequest(topic=topic, mode="consensus", judges=3),
        mode="consensus", preset="default", status=status, requested_by="U0REQUEST",
        origin=Origin(surface="slack", channel_id="C1"), result=result, cost_usd=0.0123,
        created_at=WHEN)
    values.update(overrides)
    return DebateRecord(**values)


def review_for(status: ReviewStatus = ReviewStatus.PENDING, **overrides: Any) -> Review:
    values: dict[str, Any] = dict(id="rev-42", debate_id="d-1", status=status,
                                  reason=f"alpha 0.42 is in the review band; {HOSTILE}",
                                  channel_id="C1", message_ts="1700000000.000100")
    values.update(overrides)
    return Review(**values)


# --------------------------------------------------------------------------------------------
# checking messages the way Slack would


def assert_blocks_valid(blocks: list[dict[str, Any]], *, max_blocks: int = 50,
                        max_chars: int | None = 12_000) -> None:
    parsed = Block.parse_all(blocks)
    assert all(p is not None for p in parsed)
    assert [p.to_dict() for p in parsed] == blocks  # round trip
    assert len(blocks) <= max_blocks
    if max_chars is not None:
        assert len(json.dumps(blocks)) <= max_chars
    for block in blocks:
        assert_block_limits(block)


def assert_block_limits(block: dict[str, Any]) -> None:
    kind = block["type"]
    if kind == "section":
        assert len(block.get("text", {}).get("text", "")) <= 3000
        assert len(block.get("fields", [])) <= 10
        assert all(len(f["text"]) <= 2000 for f in block.get("fields", []))
        assert block.get("text", {}).get("text", "x").strip() or block.get("fields")
    elif kind == "header":
        assert len(block["text"]["text"]) <= 150
    elif kind == "context":
        assert 1 <= len(block["elements"]) <= 10
    elif kind == "actions":
        assert len(block["elements"]) <= 25
        for button in block["elements"]:
            assert len(button["text"]["text"]) <= 75
            assert len(button.get("value", "")) <= 2000
            assert len(button["action_id"]) <= 255


def assert_message_valid(message: B.Message) -> None:
    assert isinstance(message, B.Message)
    assert 0 < len(message.text) <= 3000
    assert_blocks_valid(message.blocks)
    assert_no_raw_markup(message)


def assert_no_raw_markup(message: B.Message | dict[str, Any]) -> None:
    dumped = json.dumps(message.blocks if isinstance(message, B.Message) else message,
                        ensure_ascii=False)
    texts = [dumped, message.text] if isinstance(message, B.Message) else [dumped]
    for text in texts:
        for raw in RAW_MARKUP:
            assert raw not in text


def text_of(message: B.Message | dict[str, Any]) -> str:
    return json.dumps(message.blocks if isinstance(message, B.Message) else message,
                      ensure_ascii=False)


def blocks_of_type(message: B.Message, kind: str) -> list[dict[str, Any]]:
    return [b for b in message.blocks if b["type"] == kind]


# --------------------------------------------------------------------------------------------
# mrkdwn helpers


@pytest.mark.parametrize(("text", "expected"), [
    ("plain", "plain"),
    ("a & b", "a &amp; b"),
    ("<!channel>", "&lt;!channel&gt;"),
    ("<@U123>", "&lt;@U123&gt;"),
    ("<https://x|y>", "&lt;https://x|y&gt;"),
    ("&lt;", "&amp;lt;"),
    ("*bold* _it_ `code`", "*bold* _it_ `code`"),
    ("", ""),
])
def test_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short", 10, "short"),
    ("exactly10!", 10, "exactly10!"),
    ("hello world", 6, "hello…"),
    ("a &amp; b", 5, "a…"),           # would cut "&amp;" after "&a": backs off to before it
    ("a &amp; b", 8, "a &amp;…"),
    ("x &lt;y&gt;", 6, "x…"),
    ("see <https://a.b|link> now", 10, "see…"),
    ("abc", 0, ""),
    ("abcdef", 1, "…"),
])
def test_truncate(text: str, limit: int, expected: str) -> None:
    assert truncate(text, limit) == expected


def test_truncate_custom_suffix() -> None:
    assert truncate("hello world", 8, suffix=" [...]") == "he [...]"


@pytest.mark.parametrize("limit", range(1, 40))
def test_truncate_never_splits_an_entity(limit: int) -> None:
    text = escape("a&b<c>d & e < f > g &&& h")
    out = truncate(text, limit)
    assert len(out) <= limit
    body = out.removesuffix("…")
    assert re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", body), body


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("", 10, []),
    ("short", 10, ["short"]),
    ("para one\n\npara two", 12, ["para one", "para two"]),
    ("line one\nline two\nline three", 18, ["line one\nline two", "line three"]),
    ("word " * 6, 12, ["word word", "word word", "word word"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
    ("aaa &amp; bbb", 6, ["aaa", "&amp;", "bbb"]),
    ("xx&amp;yy", 4, ["xx", "&amp", ";yy"]),  # an entity longer than the limit: no choice
])
def test_chunk(text: str, limit: int, expected: list[str]) -> None:
    assert chunk(text, limit) == expected


def test_chunk_respects_limit_and_keeps_entities() -> None:
    text = escape(("Claim & evidence <here>. " * 40 + "\n\n") * 10)
    pieces = chunk(text, 500)
    assert all(0 < len(p) <= 500 for p in pieces)
    assert all(re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", p) for p in pieces)
    assert "".join(pieces).replace(" ", "").replace("\n", "") == \
        text.replace(" ", "").replace("\n", "")


def test_chunk_rejects_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="positive"):
        chunk("x", 0)


@pytest.mark.parametrize(("user_id", "expected"), [
    ("U0123ABC", "<@U0123ABC>"),
    ("W0123ABC", "<@W0123ABC>"),
    ("u0123", "u0123"),
    ("U123>|<!channel", "U123&gt;|&lt;!channel"),
    ("cli", "cli"),
    ("", ""),
])
def test_user(user_id: str, expected: str) -> None:
    assert user(user_id) == expected


@pytest.mark.parametrize(("channel_id", "expected"), [
    ("C0123", "<#C0123>"), ("G77", "<#G77>"), ("#general", "#general"), ("C1>", "C1&gt;"),
])
def test_channel(channel_id: str, expected: str) -> None:
    assert channel(channel_id) == expected


@pytest.mark.parametrize(("url", "label", "expected"), [
    ("https://x.io/a", "A & B", "<https://x.io/a|A &amp; B>"),
    ("http://x.io/?a=1&b=2", "q", "<http://x.io/?a=1&amp;b=2|q>"),
    ("javascript:alert(1)", "x", "x"),
    ("https://x.io/a|<!channel>", "lbl", "lbl"),
    ("https://x.io/a b", "<b>", "&lt;b&gt;"),
    ("ftp://x.io/", "f", "f"),
    ("https://", "n", "n"),
])
def test_link(url: str, label: str, expected: str) -> None:
    assert link(url, label) == expected


def test_date_fmt() -> None:
    assert date_fmt(WHEN) == (
        "<!date^1714566600^{date_short_pretty} {time}|2024-05-01 12:30 UTC>")
    assert date_fmt(WHEN.replace(tzinfo=None)) == date_fmt(WHEN)


def test_safe_cut_backs_off_inside_a_link() -> None:
    text = "ab <https://x.io|label> cd"
    assert safe_cut(text, 10) == 3
    assert safe_cut(text, 3) == 3


@pytest.mark.parametrize(("done", "total", "expected"), [
    (3, 5, "▰▰▰▱▱ 3/5"), (0, 4, "▱▱▱▱ 0/4"), (4, 4, "▰▰▰▰ 4/4"), (0, 0, "▱ 0/0"),
    (20, 40, "▰" * 10 + "▱" * 10 + " 20/40"),
])
def test_progress_bar(done: int, total: int, expected: str) -> None:
    assert B.progress_bar(done, total) == expected


@pytest.mark.parametrize(("amount", "expected"), [
    (0, "$0.00"), (0.0012, "$0.0012"), (0.0734, "$0.0734"), (0.5, "$0.50"), (0.081, "$0.081"),
    (1234.5, "$1,234.50")])
def test_usd(amount: float, expected: str) -> None:
    assert B.usd(amount) == expected


# --------------------------------------------------------------------------------------------
# results


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_divergence_summary_is_valid_for_every_result(name: str) -> None:
    message = B.divergence_summary(RESULTS[name](), transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert TRANSCRIPT in text_of(message)


def test_divergence_summary_contested_consensus() -> None:
    message = B.divergence_summary(consensus_result(), transcript_url=TRANSCRIPT)
    text = text_of(message)
    assert "0.42 (needs review)" in text
    assert "0.18 – 0.61" in text
    assert "0.31" in text
    assert "*For (weighted score)*\\n6.50" in text
    assert "*Against (weighted score)*\\n5.00" in text
    assert "Irreconcilable" in text
    assert "sent to a reviewer" in text
    assert "⚠ degraded: consensus/judge/2 (invalid JSON after 3 attempts)" in text
    assert "filtered by the provider's content filter: procon/con/rebuttal" in text
    assert "Incomplete" in text and "Incomplete" in message.text
    assert "$0.0734" in text and "50,500 tokens" in text and "14 calls (2 reused)" in text
    assert "1m 23s" in text


def test_divergence_summary_lists_five_agreements_and_three_disagreements() -> None:
    text = text_of(B.divergence_summary(consensus_result(), transcript_url=TRANSCRIPT))
    agree = text.split("Where the judges agree")[1].split('"}')[0]
    disagree = text.split("Where they disagree most")[1].split('"}')[0]
    assert agree.count("•") == 5
    assert disagree.count("•") == 3
    assert "spread 0.2" in disagree and "judge-a 7" in disagree


def test_complete_result_does_not_say_incomplete() -> None:
    message = B.divergence_summary(clean_result(), transcript_url=TRANSCRIPT)
    assert "Incomplete" not in text_of(message) + message.text
    assert "degraded" not in text_of(message)


def test_incomplete_when_timed_out_even_if_flagged_complete() -> None:
    message = B.divergence_summary(timed_out_result(), transcript_url=TRANSCRIPT)
    assert "Incomplete" in message.text
    assert "hard deadline" in text_of(message)
    assert "_No verdict._" in text_of(message)


def test_kappa_and_alpha_missing_say_why() -> None:
    result = clean_result()
    assert result.consensus is not None
    result.consensus.alpha, result.consensus.kappa = None, None
    result.consensus.alpha_interval = None
    text = text_of(B.divergence_summary(result, transcript_url=TRANSCRIPT))
    assert text.count("n/a (needs 2+ judges)") == 2


def test_rehearsal_result_says_rehearsal() -> None:
    message = B.divergence_summary(rehearsal_result(), transcript_url=TRANSCRIPT)
    assert B.REHEARSAL_NOTE in text_of(message)
    assert message.text.startswith("[Rehearsal]")
    assert message.blocks[1]["text"]["text"].startswith("🧪")  # right under the header


def test_simple_result_shows_verdict_and_rationale() -> None:
    text = text_of(B.divergence_summary(simple_result(), transcript_url=TRANSCRIPT))
    assert "Spaces, narrowly." in text and "*Rationale*" in text
    assert "no review routing for this mode" in text
    assert "Krippendorff" not in text


def test_structured_result_shows_rubric() -> None:
    text = text_of(B.divergence_summary(structured_result(), transcript_url=TRANSCRIPT))
    assert "*Rubric — For*\\nlogic 7 · evidence 6 · rebuttal 5" in text
    assert "*Rubric — Against*" in text
    assert "· Tie" in text


def test_mode_outcome_shows_six_keys_escaped() -> None:
    message = B.divergence_summary(mode_outcome_result(), transcript_url=TRANSCRIPT)
    outcome = next(b for b in message.blocks if b.get("fields") and "analysis" in json.dumps(b))
    assert len(outcome["fields"]) == 6
    assert "+1 more in the transcript" in text_of(message)
    assert escape(HOSTILE) in text_of(message)


def test_huge_result_is_cut_with_a_transcript_link_and_keeps_its_tail() -> None:
    message = B.divergence_summary(huge_result(), transcript_url=TRANSCRIPT)
    text = text_of(message)
    assert f"… (truncated — full transcript: <{TRANSCRIPT}|{TRANSCRIPT}>)" in text
    assert "Cost $0.0734" in json.dumps(message.blocks[-2], ensure_ascii=False)
    assert "Full transcript" in json.dumps(message.blocks[-1])
    assert "Incomplete" in text
    assert len(json.dumps(message.blocks)) > 9_000  # cut to fit, not emptied


def test_hostile_text_appears_only_escaped() -> None:
    result = consensus_result(topic=HOSTILE, verdict=HOSTILE, rationale=HOSTILE,
                              missing=[HOSTILE], error=HOSTILE, preset=HOSTILE,
                              filtered=[HOSTILE])
    message = B.divergence_summary(result, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert escape(HOSTILE) in text_of(message)
    assert escape(HOSTILE) in message.text


# --------------------------------------------------------------------------------------------
# human review


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_review_request_buttons_carry_only_the_review_id(name: str) -> None:
    review = review_for()
    message = B.review_request(review, RESULTS[name](), transcript_url=TRANSCRIPT,
                               thread_link=THREAD)
    assert_message_valid(message)
    (actions,) = blocks_of_type(message, "actions")
    assert message.blocks[-1] == actions  # never cut
    buttons = {b["action_id"]: b for b in actions["elements"]}
    assert set(buttons) == {"review_approve", "review_escalate", "review_rerun"}
    assert {b["value"] for b in buttons.values()} == {"rev-42"}
    assert buttons["review_approve"]["style"] == "primary"
    assert buttons["review_escalate"]["style"] == "danger"
    assert "style" not in buttons["review_rerun"]


def test_review_request_says_why_and_links_the_thread() -> None:
    message = B.review_request(review_for(), consensus_result(), transcript_url=TRANSCRIPT,
                               thread_link=THREAD)
    text = text_of(message)
    assert "*Why it needs a review:* alpha 0.42 is in the review band; " + escape(HOSTILE) in text
    assert f"<{THREAD}|Debate thread>" in text
    assert "α 0.42 (needs review) · κ 0.31" in text
    assert "Incomplete" in text


@pytest.mark.parametrize(("status", "expected"), [
    (ReviewStatus.APPROVED, "✅ Approved by <@U0REVIEW> at <!date^1714566600^"),
    (ReviewStatus.ESCALATED, "⛔ Escalated by <@U0REVIEW> at <!date^1714566600^"),
    (ReviewStatus.RERUN, "🔁 Re-run requested by <@U0REVIEW> at <!date^1714566600^"),
])
def test_review_decided_replaces_buttons(status: ReviewStatus, expected: str) -> None:
    review = review_for(status, decided_by="U0REVIEW", decided_at=WHEN,
                        decision_note=f"bad sources {HOSTILE}")
    message = B.review_decided(review, consensus_result(), transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert not blocks_of_type(message, "actions")
    assert message.blocks[-1]["text"]["text"].startswith(expected)


def test_escalation_reason_is_shown_escaped() -> None:
    review = review_for(ReviewStatus.ESCALATED, decided_by="U0REVIEW", decided_at=WHEN,
                        decision_note=HOSTILE)
    message = B.review_decided(review, huge_result(), transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert message.blocks[-1]["text"]["text"].endswith("— reason: " + escape(HOSTILE))


def test_decision_without_a_known_user_or_time() -> None:
    review = review_for(ReviewStatus.RERUN, decided_by="not-a-user<!here>")
    assert B.decision_line(review) == "🔁 Re-run requested by not-a-user&lt;!here&gt;"


# --------------------------------------------------------------------------------------------
# lifecycle messages


def test_debate_started() -> None:
    estimate = Estimate(mode="consensus", calls=14, depth=5, prompt_tokens=40_000,
                        completion_tokens=9_000, usd=0.0812, calls_per_role={"judge": 3})
    message = B.debate_started(record_for(), estimate, TRANSCRIPT)
    assert_message_valid(message)
    text = text_of(message)
    assert "~14 calls · ~$0.0812" in text and "*Judges*\\n3" in text and "<@U0REQUEST>" in text
    assert escape(HOSTILE) in text and escape(HOSTILE) in message.text
    assert B.REHEARSAL_NOTE not in text


@pytest.mark.parametrize("how", ["kwarg", "estimate"])
def test_debate_started_rehearsal_is_obvious(how: str) -> None:
    estimate = Estimate(mode="simple", calls=3, depth=1, prompt_tokens=1, completion_tokens=1,
                        usd=0.0, calls_per_role={}, rehearsal=how == "estimate")
    request = DebateRequest(topic="t")
    message = B.debate_started(record_for(request=request), estimate, TRANSCRIPT,
                               rehearsal=how == "kwarg")
    assert_message_valid(message)
    assert "Rehearsal: offline placeholder model, not a real debate" in text_of(message)
    assert message.text.startswith("[Rehearsal]")


def test_debate_started_huge_topic_without_estimate() -> None:
    message = B.debate_started(record_for(topic=HOSTILE * 100, downgraded_from="consensus",
                                          mode="simple"), None, TRANSCRIPT)
    assert_message_valid(message)
    assert "downgraded from consensus" in text_of(message)
    assert "*Estimate*\\nn/a" in text_of(message)


def test_status_progress_and_cost() -> None:
    planned = ["opening", "rebuttal", "closing", "judging", "consensus"]
    message = B.status(record_for(), phase="closing", done_phases=[*planned[:3], "closing"],
                       planned_phases=planned, cost_usd=0.0123, rehearsal=False)
    assert_message_valid(message)
    text = text_of(message)
    assert "▰▰▰▱▱ 3/5" in text
    assert "Phase: *closing*" in text and "$0.0123" in text
    assert "✓ opening" in text and "· judging" in text


def test_status_failed_rehearsal_shows_error_and_banner() -> None:
    record = record_for(status=DebateStatus.FAILED, error=HOSTILE)
    message = B.status(record, phase="judging", done_phases=[], planned_phases=[],
                       cost_usd=0.0, rehearsal=True, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert "❌ *Failed*" in text_of(message) and B.REHEARSAL_NOTE in text_of(message)
    assert escape(HOSTILE) in text_of(message)


def test_phase_reply_sides_roles_and_flags() -> None:
    summary = PhaseSummary(name="rebuttal", highlights={"judge/1": "tie-break", "con": "cost",
                                                        "pro": HOSTILE},
                           degraded=["procon/pro/rebuttal"], filtered=["procon/con/rebuttal"],
                           elapsed_seconds=12)
    message = B.phase_reply(summary, rehearsal=False)
    assert_message_valid(message)
    texts = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
    assert texts[0] == "*Phase finished: rebuttal* (12s)"
    assert texts[1].startswith("⚠ degraded: procon/pro/rebuttal")
    assert texts[2] == "⚠ filtered by the provider's content filter: procon/con/rebuttal"
    assert texts[3:] == ["*For*\n" + escape(HOSTILE), "*Against*\ncost", "*judge/1*\ntie-break"]


def test_phase_reply_huge_and_rehearsal() -> None:
    summary = huge_result().phases[0]
    summary.highlights.update({f"role{i}": "x " * 3000 for i in range(60)})
    message = B.phase_reply(summary, rehearsal=True, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert B.REHEARSAL_NOTE in text_of(message)
    assert "truncated — full transcript" in text_of(message)


def test_phase_reply_without_highlights() -> None:
    message = B.phase_reply(PhaseSummary(name="opening"), rehearsal=False)
    assert_message_valid(message)
    assert "No highlights" in text_of(message)


# --------------------------------------------------------------------------------------------
# modals, help, errors, budget, home


def test_escalate_modal() -> None:
    view = B.escalate_modal("rev-42")
    assert View(**view).to_dict() == view
    assert view["callback_id"] == "review_escalate_modal"
    assert view["private_metadata"] == "rev-42"
    assert len(view["title"]["text"]) <= 24 and view["submit"]["text"] == "Escalate"
    (field,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["block_id"] == "reason"
    assert field["element"] | {"placeholder": None} == field["element"] | {
        "type": "plain_text_input", "action_id": "reason_input", "multiline": True,
        "placeholder": None}


def test_debate_modal() -> None:
    view = B.debate_modal(["default", "fast"], ["simple", "consensus"], "C0123")
    assert View(**view).to_dict() == view
    assert view["callback_id"] == "debate_modal" and view["private_metadata"] == "C0123"
    inputs = {b["block_id"]: b["element"] for b in view["blocks"]}
    assert inputs["topic"]["max_length"] == 4000 and inputs["topic"]["multiline"]
    assert inputs["topic"]["action_id"] == "topic_input"
    assert inputs["mode"]["initial_option"]["value"] == "consensus"
    assert inputs["preset"]["initial_option"]["value"] == "default"
    assert [o["value"] for o in inputs["judges"]["options"]] == ["2", "3", "4", "5", "6"]
    assert {e["type"] for e in inputs.values()} == {"plain_text_input", "static_select"}


def test_debate_modal_without_presets() -> None:
    view = B.debate_modal([], ["simple"], "C1")
    assert {b["block_id"] for b in view["blocks"]} == {"topic", "mode", "judges"}


def test_help_and_error() -> None:
    usage = "`/debate <topic>` starts a debate; `/debate budget` shows spend & cap."
    help_message = B.help_text(usage)
    assert_message_valid(help_message)
    assert "&lt;topic&gt;" in text_of(help_message) and "&amp; cap" in help_message.text
    failure = B.error("I am not in <#C1|general> & cannot post", usage)
    assert_message_valid(failure)
    assert failure.text == "I am not in &lt;#C1|general&gt; &amp; cannot post"
    assert "*Usage*" in text_of(failure)
    assert len(B.error("no usage").blocks) == 1


@pytest.mark.parametrize(("state", "expected"), [
    ({"spent_usd": 2.5, "cap_usd": 10.0, "reserved_usd": 0.5}, ["$2.50", "$10.00", "$7.00",
                                                                "30% of today's cap"]),
    ({"spent_usd": 9.0, "cap_usd": 10.0, "reserved_usd": 1.5}, ["⛔ The cap is reached"]),
    ({"spent_usd": 8.5, "cap_usd": 10.0}, ["⚠ Over 80%"]),
    ({"spent_usd": 1, "remaining_usd": 4, "cap_usd": None}, ["*Daily cap*\\nnone", "$4.00"]),
    ({}, ["$0.00", "*Remaining*\\nn/a"]),
])
def test_budget(state: dict[str, Any], expected: list[str]) -> None:
    message = B.budget(state)
    assert_message_valid(message)
    for part in expected:
        assert part in text_of(message)


def test_app_home_for_a_reviewer() -> None:
    recent = [record_for(consensus_result(), status=DebateStatus.AWAITING_REVIEW)]
    view = B.app_home(recent, {"spent_usd": 1.0, "cap_usd": 10.0}, [review_for()],
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
    view = B.app_home(recent, {}, [review_for()] * 3, is_reviewer=False,
                      public_url="https://dialectic.example.com")
    assert_blocks_valid(view["blocks"], max_blocks=100, max_chars=None)
    text = text_of(view)
    assert "Waiting for review" not in text and "3 debate(s) wait for a reviewer" in text
    assert "🧪 rehearsal" in text and "truncated" in text


def test_app_home_empty() -> None:
    view = B.app_home([], {}, [], is_reviewer=True, public_url="")
    assert "No debates yet" in text_of(view)


def test_fit_keeps_head_and_tail_and_notes_the_cut() -> None:
    head, tail = [B.header("h")], [B.review_buttons("r")]
    body = [B.section("x" * 2900) for _ in range(60)]
    out = B.fit(head, body, tail, transcript_url=None)
    assert out[0] == head[0] and out[-1] == tail[0]
    assert "truncated — the full transcript is in the web console" in json.dumps(
        out[-2], ensure_ascii=False)
    assert len(json.dumps(out)) <= 12_000 and len(out) <= 50
    small = [B.section("y")] * 60
    out = B.fit(head, small, tail, transcript_url=TRANSCRIPT)
    assert len(out) == 50 and "truncated" in json.dumps(out[-2])
