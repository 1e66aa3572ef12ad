"""Every surface shows a debate whose every text is 5,000 characters and whose lists hold 12 items
(tests/support/reply_fixtures.py `long_result`), as replies with no length limit can be:

- Slack: every message parses with slack_sdk's models, stays within the block, character and
  per-block limits, escapes the model's markup, and marks what it shortened with an ellipsis and
  the transcript link (the full text is kept in the stored result);
- the console: the debate's page (the transcript page Slack links to) shows every text whole,
  escaped; the list of debates shortens topic and verdict with an ellipsis;
- the CLI: the summary prints the verdict and the rationale whole; panel, critique and redteam
  outcomes as prose with every text whole and wrapped (bot/cli/outcomes.py), other modes' long
  outcome fields shortened with an ellipsis and a pointer to `--json`, which prints everything.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from markupsafe import escape as html_escape
from rich.console import Console

from bot.cli.progress import WHOLE_HINT, print_summary
from bot.http.console import index_page, transcript_page
from bot.scheduling.reports import DigestReport, SignalOutcome
from bot.service.timeline import timeline_of
from bot.slack.mrkdwn import ELLIPSIS
from bot.slack.views import brief, debate, digest, notices, review
from bot.slack.views.common import Message
from engine.core.presets import all_presets
from engine.domain import DebateResult
from engine.reading.outcomes import CritiqueOutcome, PanelOutcome, RedTeamOutcome
from engine.settings import EngineSettings
from engine.vocabulary import Mode
from storage.records import DebateRecord, DebateStatus
from tests.support.reply_fixtures import CHARS, ITEMS, long_result, long_text
from tests.support.slack_view_fixtures import (
    THREAD,
    TRANSCRIPT,
    WHEN,
    assert_message_valid,
    record_for,
    review_for,
    text_of,
)

MODES = list(Mode)
ENGINE = EngineSettings()
BUDGET = {"spent_usd": 0.0042, "reserved_usd": 0.5, "remaining_usd": 0.0458, "cap_usd": 0.05}


def _record(result: DebateResult) -> DebateRecord:
    return record_for(result, topic=result.topic, mode=result.mode,
                      status=DebateStatus.AWAITING_REVIEW)


def _assert_shortened_with_link(message: Message) -> None:
    shown = text_of(message)
    assert ELLIPSIS in shown and TRANSCRIPT in shown
    assert "END-verdict" not in shown          # 5,000 characters never fit one section


# --------------------------------------------------------------------------------------------
# Slack


@pytest.mark.parametrize("mode", MODES)
def test_the_result_message_fits_and_links_the_full_text(mode: Mode) -> None:
    result = long_result(mode)
    message = debate.divergence_summary(result, transcript_url=TRANSCRIPT)
    assert_message_valid(message)
    _assert_shortened_with_link(message)
    assert "START-verdict" in text_of(message)


@pytest.mark.parametrize("mode", MODES)
def test_each_phase_reply_fits_and_links_the_full_text(mode: Mode) -> None:
    result = long_result(mode)
    for phase in result.phases:
        message = debate.phase_reply(phase, rehearsal=False, transcript_url=TRANSCRIPT)
        assert_message_valid(message)
        shown = text_of(message)
        assert ELLIPSIS in shown and TRANSCRIPT in shown
        first = next(iter(phase.highlights))
        assert f"START-highlight-{phase.name[-1]}-{first}" in shown


@pytest.mark.parametrize("mode", MODES)
def test_the_review_request_fits_and_keeps_its_buttons(mode: Mode) -> None:
    result = long_result(mode)
    message = review.review_request(review_for(), result, transcript_url=TRANSCRIPT,
                                    thread_link=THREAD)
    assert_message_valid(message)
    assert message.blocks[-1]["type"] == "actions"
    assert TRANSCRIPT in text_of(message)


@pytest.mark.parametrize("mode", MODES)
def test_the_brief_the_resolved_notice_and_the_started_root_fit(mode: Mode) -> None:
    result = long_result(mode)
    summary = debate.divergence_summary(result, transcript_url=TRANSCRIPT)
    messages = [
        brief.brief_message(result.topic, meeting_at=WHEN, result=result,
                            status=DebateStatus.COMPLETED, url=TRANSCRIPT, rehearsal=False),
        notices.resolved(summary, result, transcript_url=TRANSCRIPT),
        debate.debate_started(_record(result), None, TRANSCRIPT),
    ]
    for message in messages:
        assert_message_valid(message)
        assert TRANSCRIPT in text_of(message)


def test_a_digest_of_twelve_long_results_fits() -> None:
    outcomes = tuple(SignalOutcome(title=long_text(f"signal-{i}"), status="awaiting_review",
                                   debate_id=f"d-{i}", url=TRANSCRIPT,
                                   result=long_result(MODES[i % len(MODES)]),
                                   reason=long_text(f"reason-{i}"))
                     for i in range(ITEMS))
    report = DigestReport(schedule_id="morning", slot="2024-05-01", when=WHEN, outcomes=outcomes)
    assert_message_valid(digest.digest_message(report))
    details = digest.digest_details(report)
    assert len(details) == ITEMS
    for message in details:
        assert_message_valid(message)


def test_the_stored_result_keeps_every_text_whole() -> None:
    result = long_result(Mode.CONSENSUS)
    stored = DebateResult.model_validate_json(result.model_dump_json())
    assert stored.verdict == long_text("verdict") and len(stored.rationale) == CHARS
    assert len(stored.trace_table) == 2 * ITEMS
    assert all(len(r.claim) == CHARS for r in stored.trace_table)


# --------------------------------------------------------------------------------------------
# the console


def _whole_texts(result: DebateResult) -> list[str]:
    """Texts the debate page must show whole: the verdict, the rationale, the argument trace,
    each phase's highlights and the mode's main answer."""
    texts = [result.verdict, result.rationale]
    texts += [t for r in result.trace_table for t in (r.claim, r.evidence, r.challenge,
                                                      r.response)]
    texts += [h for p in result.phases for h in p.highlights.values()]
    outcome: Any = result.outcome
    if result.mode == Mode.PANEL:
        texts += [outcome.synthesis.answer, *outcome.synthesis.disagreements,
                  outcome.grade.rationale, *[p.final.summary for p in outcome.panelists]]
    elif result.mode == Mode.CRITIQUE:
        texts += [outcome.final.answer, *outcome.final.key_points, *outcome.final.open_issues]
    elif result.mode == Mode.REDTEAM:
        texts += [outcome.synthesis.rationale, *outcome.synthesis.mitigation_steps,
                  *[r.risk for r in outcome.challenge.risks], outcome.revision.action]
    return texts


@pytest.mark.parametrize("mode", MODES)
def test_the_debate_page_shows_every_text_whole_and_escaped(mode: Mode) -> None:
    result = long_result(mode)
    record = _record(result)
    page = transcript_page(ENGINE, record, timeline=timeline_of(ENGINE, record, []))
    for text in _whole_texts(result):
        assert str(html_escape(text)) in page
    assert "<script>x</script>" not in page


def test_the_list_of_debates_shortens_topic_and_verdict() -> None:
    result = long_result(Mode.CONSENSUS)
    page = index_page(records=[_record(result)], budget=BUDGET, presets=all_presets(ENGINE),
                      rehearsal=False)
    assert "START-topic" in page and "END-topic" not in page
    assert "START-verdict" in page and "END-verdict" not in page
    assert page.count("…") >= 2
    assert "<script>x</script>" not in page


# --------------------------------------------------------------------------------------------
# the CLI


def _summary(result: DebateResult) -> str:
    out = io.StringIO()
    print_summary(Console(file=out, width=100, color_system=None, soft_wrap=True), result)
    return out.getvalue()


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("mode", MODES)
def test_the_cli_summary_prints_verdict_and_rationale_whole(mode: Mode) -> None:
    result = long_result(mode)
    printed = _summary(result)
    assert _squeezed(result.verdict) in _squeezed(printed)
    assert _squeezed(result.rationale) in _squeezed(printed)
    assert "<!channel>" in printed          # text, never markup: rich printed it literally
    if mode in (Mode.PANEL, Mode.CRITIQUE, Mode.REDTEAM):
        assert WHOLE_HINT not in printed
        for text in _outcome_texts(result):
            assert _squeezed(text) in _squeezed(printed)
    longest = max(len(line) for line in printed.splitlines()
                  if not line.startswith(("Verdict:", "Rationale:", "COMPLETED")))
    assert longest < CHARS


def _outcome_texts(result: DebateResult) -> list[str]:
    """The texts the prose summary must show whole: the synthesis, final answer or decision."""
    outcome = result.outcome
    if isinstance(outcome, PanelOutcome) and outcome.synthesis is not None:
        s = outcome.synthesis
        return [s.conclusion, s.answer, s.rationale, *s.agreements, *s.disagreements]
    if isinstance(outcome, CritiqueOutcome) and outcome.final is not None:
        f = outcome.final
        return [f.summary, f.answer, *f.key_points, *f.open_issues]
    if isinstance(outcome, RedTeamOutcome) and outcome.synthesis is not None:
        return [outcome.synthesis.decision, *outcome.synthesis.mitigation_steps]
    return []


def test_the_cli_json_is_the_whole_result() -> None:
    result = long_result(Mode.REDTEAM)
    dumped = json.loads(json.dumps(result.model_dump(mode="json")))
    assert DebateResult.model_validate(dumped) == result
