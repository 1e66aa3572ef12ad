"""The debate's own messages: started, status, phase replies and the divergence summary, over
realistic results; alpha is printed so it cannot contradict its band, scores stay on 1-10."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.service.progress import Progress, progress_from
from bot.slack.mrkdwn import escape
from bot.slack.views import common as B
from bot.slack.views import debate as D
from engine.domain import (
    CostBreakdown,
    DebateRequest,
    Estimate,
    PhaseSummary,
)
from engine.settings import ThresholdSpec
from engine.untrusted.injection import Finding, FindingKind
from storage.records import DebateStatus
from tests.support.slack_view_fixtures import (
    HOSTILE,
    RESULTS,
    TRANSCRIPT,
    assert_message_valid,
    clean_result,
    consensus_result,
    huge_result,
    mode_outcome_result,
    near_threshold_result,
    record_for,
    rehearsal_result,
    simple_result,
    structured_result,
    text_of,
    timed_out_result,
)

# --------------------------------------------------------------------------------------------
# results


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_divergence_summary_is_valid_for_every_result(name: str) -> None:
    message = D.divergence_summary(RESULTS[name](), transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert TRANSCRIPT in text_of(message)


def test_divergence_summary_contested_consensus() -> None:
    message = D.divergence_summary(consensus_result(), transcript_url=TRANSCRIPT)
    text = text_of(message)
    assert "0.42 (needs review)" in text
    assert "[0.18, 0.61]" in text
    assert "0.31" in text
    # stored before the judges' own means were kept: the calibrated ones, named so
    assert "*For (calibrated score, 1–10)*\\n6.5" in text
    assert "*Against (calibrated score, 1–10)*\\n5.0" in text
    assert "Irreconcilable" in text
    assert "sent to a reviewer" in text
    assert "⚠ degraded: consensus/judge/2 (invalid JSON after 3 attempts)" in text
    assert "filtered by the provider's content filter: procon/con/rebuttal" in text
    assert "Incomplete" in text and "Incomplete" in message.text
    assert "$0.0734" in text and "50,500 tokens" in text and "14 calls (2 reused)" in text
    assert "1m 23s" in text


def test_divergence_summary_lists_five_agreements_and_three_disagreements() -> None:
    text = text_of(D.divergence_summary(consensus_result(), transcript_url=TRANSCRIPT))
    agree = text.split("Where the judges agree")[1].split('"}')[0]
    disagree = text.split("Where they disagree most")[1].split('"}')[0]
    assert agree.count("•") == 5
    assert disagree.count("•") == 3
    assert "spread 0.2" in disagree and "judge-a 7" in disagree


def test_complete_result_does_not_say_incomplete() -> None:
    message = D.divergence_summary(clean_result(), transcript_url=TRANSCRIPT)
    assert "Incomplete" not in text_of(message) + message.text
    assert "degraded" not in text_of(message)


def test_incomplete_when_timed_out_even_if_flagged_complete() -> None:
    message = D.divergence_summary(timed_out_result(), transcript_url=TRANSCRIPT)
    assert "Incomplete" in message.text
    assert "hard deadline" in text_of(message)
    assert "_No verdict._" in text_of(message)


def test_kappa_and_alpha_missing_say_why() -> None:
    result = clean_result()
    assert result.consensus is not None
    result.consensus.alpha, result.consensus.kappa = None, None
    result.consensus.alpha_interval = None
    text = text_of(D.divergence_summary(result, transcript_url=TRANSCRIPT))
    assert text.count("n/a (needs 2+ judges)") == 2


def test_rehearsal_result_says_rehearsal() -> None:
    message = D.divergence_summary(rehearsal_result(), transcript_url=TRANSCRIPT)
    assert B.REHEARSAL_NOTE in text_of(message)
    assert message.text.startswith("[Rehearsal]")
    assert message.blocks[1]["text"]["text"].startswith("🧪")  # right under the header


def test_simple_result_shows_verdict_and_rationale() -> None:
    text = text_of(D.divergence_summary(simple_result(), transcript_url=TRANSCRIPT))
    assert "Spaces, narrowly." in text and "*Rationale*" in text
    assert "no review routing for this mode" in text
    assert "Krippendorff" not in text


def test_structured_result_shows_rubric() -> None:
    text = text_of(D.divergence_summary(structured_result(), transcript_url=TRANSCRIPT))
    assert "*Rubric — For*\\nlogic 7 · evidence 6 · rebuttal 5" in text
    assert "*Rubric — Against*" in text
    assert "· Tie" in text


def test_mode_outcome_shows_six_keys_escaped() -> None:
    message = D.divergence_summary(mode_outcome_result(), transcript_url=TRANSCRIPT)
    outcome = next(b for b in message.blocks if b.get("fields") and "analysis" in json.dumps(b))
    assert len(outcome["fields"]) == 6
    assert "+1 more in the transcript" in text_of(message)
    assert escape(HOSTILE) in text_of(message)


def test_huge_result_is_cut_with_a_transcript_link_and_keeps_its_tail() -> None:
    message = D.divergence_summary(huge_result(), transcript_url=TRANSCRIPT)
    text = text_of(message)
    assert f"… (truncated — full transcript: <{TRANSCRIPT}|{TRANSCRIPT}>)" in text
    assert "Cost $0.0734" in json.dumps(message.blocks[-2], ensure_ascii=False)
    assert "Full transcript" in json.dumps(message.blocks[-1])
    assert "Incomplete" in text
    assert len(json.dumps(message.blocks)) > 9_000  # cut to fit, not emptied


@pytest.mark.parametrize(("cost", "line"), [
    (CostBreakdown(usd=0.0123, prompt_tokens=10_350, completion_tokens=2_050, cached_tokens=3_072,
                   reasoning_tokens=1_850, calls=10),
     "Cost $0.0123 · 12,400 tokens (3,072 cached, 1,850 reasoning) · 10 calls"),
    (CostBreakdown(usd=0.0123, prompt_tokens=10_350, completion_tokens=2_050, cached_tokens=3_072,
                   calls=10), "Cost $0.0123 · 12,400 tokens (3,072 cached) · 10 calls"),
    (CostBreakdown(usd=0.0123, prompt_tokens=10_350, completion_tokens=2_050, calls=10),
     "Cost $0.0123 · 12,400 tokens · 10 calls"),
])
def test_the_cost_line_names_cached_and_reasoning_tokens_when_there_are_any(
        cost: CostBreakdown, line: str) -> None:
    assert line in text_of(D.divergence_summary(consensus_result(cost=cost),
                                                transcript_url=TRANSCRIPT))


def test_hostile_text_appears_only_escaped() -> None:
    result = consensus_result(topic=HOSTILE, verdict=HOSTILE, rationale=HOSTILE,
                              missing=[HOSTILE], error=HOSTILE, preset=HOSTILE,
                              filtered=[HOSTILE])
    message = D.divergence_summary(result, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert escape(HOSTILE) in text_of(message)
    assert escape(HOSTILE) in message.text



# --------------------------------------------------------------------------------------------
# lifecycle messages


def test_debate_started() -> None:
    estimate = Estimate(mode="consensus", calls=14, depth=5, prompt_tokens=40_000,
                        completion_tokens=9_000, usd=0.0812, calls_per_role={"judge": 3},
                        usd_high=0.2, ceiling_usd=0.8)
    message = D.debate_started(record_for(), estimate, TRANSCRIPT)
    assert_message_valid(message)
    text = text_of(message)
    assert "~14 calls · $0.08–$0.20 · ceiling $0.80 = 4 × the high estimate" in text
    assert "*Judges*\\n3" in text and "<@U0REQUEST>" in text
    assert escape(HOSTILE) in text and escape(HOSTILE) in message.text
    assert B.REHEARSAL_NOTE not in text


@pytest.mark.parametrize("how", ["kwarg", "estimate"])
def test_debate_started_rehearsal_is_obvious(how: str) -> None:
    estimate = Estimate(mode="simple", calls=3, depth=1, prompt_tokens=1, completion_tokens=1,
                        usd=0.0, calls_per_role={}, rehearsal=how == "estimate")
    request = DebateRequest(topic="t")
    message = D.debate_started(record_for(request=request), estimate, TRANSCRIPT,
                               rehearsal=how == "kwarg")
    assert_message_valid(message)
    assert "Rehearsal: offline placeholder model, not a real debate" in text_of(message)
    assert message.text.startswith("[Rehearsal]")


def test_debate_started_huge_topic_without_estimate() -> None:
    message = D.debate_started(record_for(topic=HOSTILE * 100, downgraded_from="consensus",
                                          mode="simple"), None, TRANSCRIPT)
    assert_message_valid(message)
    assert "downgraded from consensus" in text_of(message)
    assert "*Estimate*\\nn/a" in text_of(message)


PLANNED = ["opening", "rebuttal", "closing", "judging", "consensus"]


def folded(*events: tuple[str, dict[str, Any]], planned_calls: int = 0) -> Progress:
    return progress_from(events, Progress(planned=list(PLANNED), planned_calls=planned_calls))


def test_status_progress_and_cost() -> None:
    progress = folded(*[(kind, {"phase": p}) for p in PLANNED[:3]
                        for kind in ("phase_started", "phase_finished")],
                      ("phase_started", {"phase": "judging"}),
                      ("step_finished", {"key": "a", "phase": "judging", "cost_usd": 0.0123}),
                      planned_calls=14)
    message = D.status(record_for(), progress, rehearsal=False)
    assert_message_valid(message)
    text = text_of(message)
    assert "▰▰▰▱▱ 3/5" in text
    assert "Phase: *judging* · calls 1/14" in text and "$0.0123" in text
    assert "✓ opening" in text and "▸ *judging*" in text and "· consensus" in text


def test_status_is_honest_about_failed_and_partial_phases() -> None:
    """A phase in which nothing succeeded is ✗, one with gaps says how many: never a plain ✓."""
    progress = folded(
        ("phase_started", {"phase": "opening"}),
        ("step_degraded", {"key": "o/pro", "phase": "opening", "reason": "connection refused"}),
        ("step_degraded", {"key": "o/con", "phase": "opening", "reason": "connection refused"}),
        ("phase_finished", {"phase": "opening", "degraded": ["o/pro", "o/con"]}),
        ("phase_started", {"phase": "rebuttal"}),
        ("step_finished", {"key": "r/pro", "phase": "rebuttal"}),
        ("step_filtered", {"key": "r/con", "phase": "rebuttal"}),
        ("phase_finished", {"phase": "rebuttal"}))
    text = text_of(D.status(record_for(), progress, rehearsal=False))
    assert "✗ opening (nothing succeeded)" in text
    assert "⚠ rebuttal (1 missing)" in text
    assert "✓" not in text


def test_status_failed_rehearsal_shows_error_and_banner() -> None:
    record = record_for(status=DebateStatus.FAILED, error=HOSTILE)
    progress = progress_from([("phase_started", {"phase": "judging"})])
    message = D.status(record, progress, rehearsal=True, transcript_url=TRANSCRIPT, final=True)
    assert_message_valid(message)
    assert "❌ *Failed*" in text_of(message) and B.REHEARSAL_NOTE in text_of(message)
    assert escape(HOSTILE) in text_of(message)


def test_phase_reply_sides_roles_and_flags() -> None:
    summary = PhaseSummary(name="rebuttal", highlights={"judge/1": "tie-break", "con": "cost",
                                                        "pro": HOSTILE},
                           degraded=["procon/pro/rebuttal"], filtered=["procon/con/rebuttal"],
                           elapsed_seconds=12)
    message = D.phase_reply(summary, rehearsal=False)
    assert_message_valid(message)
    texts = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
    assert texts[0] == "*Phase finished: rebuttal* (12s)"
    assert texts[1].startswith("⚠ degraded: procon/pro/rebuttal")
    assert texts[2] == "⚠ filtered by the provider's content filter: procon/con/rebuttal"
    assert texts[3:] == ["*For*\n" + escape(HOSTILE), "*Against*\ncost", "*judge/1*\ntie-break"]


def test_phase_reply_huge_and_rehearsal() -> None:
    summary = huge_result().phases[0]
    summary.highlights.update({f"role{i}": "x " * 3000 for i in range(60)})
    message = D.phase_reply(summary, rehearsal=True, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    assert B.REHEARSAL_NOTE in text_of(message)
    assert "truncated — full transcript" in text_of(message)


def test_phase_reply_without_highlights() -> None:
    message = D.phase_reply(PhaseSummary(name="opening"), rehearsal=False)
    assert_message_valid(message)
    assert "No highlights" in text_of(message)




# --------------------------------------------------------------------------------------------
# numbers that cannot contradict their words


@pytest.mark.parametrize(("thresholds", "shown"), [
    (ThresholdSpec(), "0.799 (tentative agreement: 0.67 ≤ α < 0.80)"),
    (None, "0.799 (tentative agreement)"),
])
def test_alpha_near_a_threshold_cannot_contradict_its_band(thresholds: ThresholdSpec | None,
                                                           shown: str) -> None:
    message = D.divergence_summary(near_threshold_result(), transcript_url=TRANSCRIPT,
                                   thresholds=thresholds)
    assert_message_valid(message)
    text = text_of(message)
    assert shown in text
    assert "0.80 (tentative" not in text


def test_calibrated_scores_stay_on_the_judges_scale() -> None:
    text = text_of(D.divergence_summary(near_threshold_result(), transcript_url=TRANSCRIPT))
    assert "calibrated mean 5.5, spread 9.0 (judge-a 10, judge-b 1)" in text
    assert "*For (calibrated score, 1–10)*\\n10.0" in text
    assert "*Against (calibrated score, 1–10)*\\n1.0" in text
    assert "11.3" not in text and "12.28" not in text


# --------------------------------------------------------------------------------------------
# text addressed to the AI


def _flags(excerpt: str = HOSTILE) -> list[Finding]:
    return [Finding(kind=FindingKind.JUDGE_DIRECTIVE, rule="score-position",
                    reason="dictates a score", start=0, end=9, excerpt=excerpt,
                    source="context")] * 4


@pytest.mark.parametrize(("preset", "headline"), [
    ("appeal", "This appeal contains text addressed to the AI."),
    ("default", "This debate's material contains text addressed to the AI."),
])
def test_a_flagged_debate_says_so_from_start_to_result(preset: str, headline: str) -> None:
    record = record_for(injection=_flags(), preset=preset)
    result = consensus_result(injection=_flags(), preset=preset)
    messages = [D.debate_started(record, None, TRANSCRIPT),
                D.divergence_summary(result, transcript_url=TRANSCRIPT)]
    for message in messages:
        assert_message_valid(message)
        text = text_of(message)
        assert headline in text and "a person reviews the result" in text
        assert f"context: dictates a score (“{escape(HOSTILE)}”)" in text
        assert "(+1 more)" in text
    status = D.status(record, folded(), rehearsal=False)
    assert_message_valid(status)
    assert D.FLAGGED_NOTE in text_of(status)


def test_an_unflagged_debate_says_nothing_of_the_kind() -> None:
    texts = [text_of(D.debate_started(record_for(), None, TRANSCRIPT)),
             text_of(D.status(record_for(), folded(), rehearsal=False)),
             text_of(D.divergence_summary(consensus_result(), transcript_url=TRANSCRIPT))]
    assert not [t for t in texts if "addressed to the AI" in t]
