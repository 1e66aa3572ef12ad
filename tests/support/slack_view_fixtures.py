"""Values the Block Kit view tests share: realistic results (a contested consensus with
degraded steps, simple and structured modes, a rehearsal, a huge result, hostile text), records
and reviews, and checks that read a message the way Slack would: blocks parse with
`slack_sdk.models`, round-trip through `to_dict`, and stay within the per-block and per-message
limits, with no raw mrkdwn control sequence from model or user text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from slack_sdk.models.blocks import Block

from bot.slack.views.common import Message
from engine.domain import (
    ConsensusSummary,
    CostBreakdown,
    DebateRequest,
    DebateResult,
    DivergencePoint,
    DivergenceSummary,
    Evidence,
    PhaseSummary,
    TraceRow,
)
from engine.reading.outcomes import RedTeamOutcome, StructuredOutcome
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


def near_threshold_result() -> DebateResult:
    """Alpha a hair under the 0.80 cut (tentative), calibrated ratings stretched past 1-10."""
    point = DivergencePoint(item="con.logic", label="Against · logic", mean=6.63, spread=11.3,
                            ratings={"judge-a": 12.28, "judge-b": 0.98})
    result = clean_result()
    assert result.consensus is not None
    consensus = result.consensus.model_copy(update={
        "alpha": 0.79978, "band": "tentative", "routing": "tentative", "irreconcilable": False,
        "weighted_scores": {"pro.logic": 11.4, "con.logic": -0.5}})
    return result.model_copy(update={
        "consensus": consensus, "routing": "tentative",
        "divergence": DivergenceSummary(disagreements=[point])})


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


def assert_message_valid(message: Message) -> None:
    assert isinstance(message, Message)
    assert 0 < len(message.text) <= 3000
    assert_blocks_valid(message.blocks)
    assert_no_raw_markup(message)


def assert_no_raw_markup(message: Message | dict[str, Any]) -> None:
    dumped = json.dumps(message.blocks if isinstance(message, Message) else message,
                        ensure_ascii=False)
    texts = [dumped, message.text] if isinstance(message, Message) else [dumped]
    for text in texts:
        for raw in RAW_MARKUP:
            assert raw not in text


def text_of(message: Message | dict[str, Any]) -> str:
    return json.dumps(message.blocks if isinstance(message, Message) else message,
                      ensure_ascii=False)


def blocks_of_type(message: Message, kind: str) -> list[dict[str, Any]]:
    return [b for b in message.blocks if b["type"] == kind]


