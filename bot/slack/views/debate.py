"""A debate's own messages: the "Debate started" root, the status message kept current, one
reply per finished phase, and the divergence summary it ends with. Pure functions over values.

The result pieces (head, verdict, agreement, flags) are also what the review request shows. A
debate whose untrusted text addresses the AI says so in its root, its status and its result
(`addressed_to_ai`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.service.progress import PhaseState, PhaseView, Progress
from bot.service.results import (
    FLAG_MEANING,
    SCALE,
    alpha_text,
    band_rule,
    flag_headline,
    is_incomplete,
    point_figures,
    rubric_means,
)
from bot.service.words import interval_text
from bot.slack.mrkdwn import ELLIPSIS, chunk, escape, truncate, user
from bot.slack.views.common import (
    FIELDS_MAX,
    SECTION_TEXT_MAX,
    STATUS_WORDS,
    Block,
    Message,
    band_words,
    clip,
    context,
    duration,
    fields,
    header,
    links,
    listing,
    message,
    progress_bar,
    quote,
    rehearsal_banner,
    routing_words,
    section,
    side_name,
    truncation_notice,
    usd,
)
from bot.slack.views.discussion import preset_blocks
from engine.domain import (
    ConsensusSummary,
    DebateResult,
    DivergencePoint,
    Estimate,
    PhaseSummary,
)
from engine.money.cost import estimate_line, token_summary
from engine.settings import ThresholdSpec
from engine.untrusted.injection import Finding
from storage.records import DebateRecord, DebateStatus

NEEDS_JUDGES = "n/a (needs 2+ judges)"
#: How much of a side's highlight, an outcome field and the rationale a message shows; longer
#: text is shortened with an ellipsis and the transcript link (it is kept whole in the result).
HIGHLIGHT_MAX = 1000
VERDICT_MAX = 1500
OUTCOME_VALUE_MAX = 300
RATIONALE_PIECES = 2
FLAGGED_NOTE = "⚠ Contains text addressed to the AI: a person reviews the result."


def addressed_to_ai(findings: Sequence[Finding], preset: str | None) -> Block:
    """The flag on a debate: its untrusted text addresses the AI, what was found, and what that
    means (the models see it only as quoted material; a person reviews the result)."""
    found = listing([escape(f"{f.source}: {f.reason} (“{f.excerpt}”)" if f.source
                            else f"{f.reason} (“{f.excerpt}”)") for f in findings], 1500,
                    shown=3)
    return section(f"⚠ *{flag_headline(preset)}* {FLAG_MEANING}\n_Found:_ {found}")


# --------------------------------------------------------------------------------------------
# started


def _started_fields(record: DebateRecord, estimate: Estimate | None) -> list[tuple[str, str]]:
    mode = escape(record.mode)
    if record.downgraded_from:
        mode += f" (downgraded from {escape(record.downgraded_from)} to fit the budget)"
    judges = str(record.request.judges) if record.request.judges else "preset default"
    cost = "n/a" if estimate is None else escape(estimate_line(estimate))
    pairs = [("Mode", mode), ("Preset", escape(record.preset)), ("Judges", judges),
             ("Estimate", cost)]
    if record.requested_by:
        pairs.append(("Requested by", user(record.requested_by)))
    if record.cached_from:
        pairs.append(("Cached", f"reuses debate `{escape(record.cached_from)}`"))
    return pairs


def debate_started(record: DebateRecord, estimate: Estimate | None, transcript_url: str, *,
                   rehearsal: bool = False) -> Message:
    """The root message in the channel: what is debated, how, and roughly what it will cost."""
    rehearsal = rehearsal or bool(estimate and estimate.rehearsal)
    head = [header("Debate started")]
    if rehearsal:
        head.append(rehearsal_banner())
    head.append(section("*Topic*\n" + quote(record.request.topic, 2500)))
    if record.flagged:
        head.append(addressed_to_ai(record.injection, record.preset))
    body = [fields(_started_fields(record, estimate))]
    if record.request.context:
        body.append(context(["Includes context from the conversation it was started in."]))
    tail = [context(["Progress and highlights follow in this thread."]),
            links(transcript_url, record.id)]
    prefix = "[Rehearsal] " if rehearsal else ""
    text = f"{prefix}Debate started: {escape(record.request.topic)}"
    return message(text, head, body, tail, transcript_url)


# --------------------------------------------------------------------------------------------
# status


PHASE_MARKS = {PhaseState.PENDING: "·", PhaseState.DONE: "✓", PhaseState.PARTIAL: "⚠",
               PhaseState.FAILED: "✗"}


def phase_mark(phase: PhaseView) -> str:
    """"✓ opening", "⚠ rebuttal (2 missing)", "✗ verdict (nothing succeeded)", "▸ *closing*"."""
    name = escape(phase.name)
    if phase.state is PhaseState.RUNNING:
        return f"▸ *{name}*"
    detail = f" ({phase.detail})" if phase.detail else ""
    return f"{PHASE_MARKS[phase.state]} {name}{detail}"


def _bar(progress: Progress) -> str:
    phases = progress.phases()
    done = sum(1 for p in phases if p.finished and (p.name in progress.planned
                                                    or not progress.planned))
    return progress_bar(done, len(progress.planned) or done)


def status(record: DebateRecord, progress: Progress, *, rehearsal: bool,
           transcript_url: str | None = None, final: bool = False) -> Message:
    """The one status message kept current with chat.update: phases, calls, cost so far.

    `final` trusts the stored, finished record over the events (status, cost)."""
    state = record.status if final or progress.status is None else progress.status
    cost = record.cost_usd if final and record.cost_usd else progress.cost_usd
    phase = "done" if final and record.status is not DebateStatus.QUEUED else progress.current
    emoji, word = STATUS_WORDS.get(state, ("⏳", escape(str(state))))
    bar = _bar(progress)
    calls = f" · {progress.calls_text()}" if progress.planned_calls else ""
    lines = [f"{emoji} *{word}*  {bar}",
             f"Phase: *{escape(phase) or '—'}*{calls} · Cost so far: {usd(cost)}"]
    if state in (DebateStatus.FAILED, DebateStatus.TIMED_OUT) and record.error:
        lines.append(f"⚠ {truncate(escape(record.error), 600)}")
    if record.flagged:
        lines.append(FLAGGED_NOTE)
    head = [rehearsal_banner()] if rehearsal else []
    head.append(section("\n".join(lines)))
    phases = progress.phases()
    body = [context(["  ".join(phase_mark(p) for p in phases)])] if phases else []
    tail = [links(transcript_url, record.id)] if transcript_url else []
    prefix = "[Rehearsal] " if rehearsal else ""
    text = f"{prefix}Debate {word.lower()}: {bar} — {escape(phase)}"
    return message(text, head, body, tail, transcript_url)


# --------------------------------------------------------------------------------------------
# phase replies


def _ordered_sides(highlights: Mapping[str, str]) -> list[str]:
    known = [s for s in ("pro", "con") if s in highlights]
    return known + [s for s in highlights if s not in known]


def step_flags(degraded: Sequence[str], filtered: Sequence[str],
               refused: Sequence[str] = ()) -> list[Block]:
    """Warnings for steps a placeholder stood in for, the provider's filter withheld, or the
    model refused (with its words, when known)."""
    said = (("⚠ degraded: {} — a placeholder stood in for these steps.", degraded, 8),
            ("⚠ filtered by the provider's content filter: {}", filtered, 8),
            ("⚠ refused by the model: {}", refused, 4))
    return [section(line.format(listing([escape(k) for k in keys], 1200, shown=shown)))
            for line, keys, shown in said if keys]


def phase_reply(summary: PhaseSummary, *, rehearsal: bool,
                transcript_url: str | None = None) -> Message:
    """A thread reply for a finished phase: each side's strongest point, and any gaps."""
    head = [rehearsal_banner()] if rehearsal else []
    took = f" ({duration(summary.elapsed_seconds)})" if summary.elapsed_seconds else ""
    head.append(section(f"*Phase finished: {escape(summary.name)}*{took}"))
    head += step_flags(summary.degraded, summary.filtered, summary.refused)
    body, cut = [], False
    for side in _ordered_sides(summary.highlights):
        if not summary.highlights[side]:
            continue
        said, shortened = clip(summary.highlights[side], HIGHLIGHT_MAX)
        cut = cut or shortened
        body.append(section(f"*{side_name(side)}*\n{said}"))
    if not body:
        body = [context(["No highlights were recorded for this phase."])]
    if cut:
        body.append(truncation_notice(transcript_url))
    prefix = "[Rehearsal] " if rehearsal else ""
    missing = summary.degraded or summary.filtered or summary.refused
    flags = " (with degraded steps)" if missing else ""
    text = f"{prefix}Phase {escape(summary.name)} finished{flags}"
    return message(text, head, body, [], transcript_url)


# --------------------------------------------------------------------------------------------
# result pieces (the summary here, the review request in review.py)


def stat(value: float | None) -> str:
    """A statistic with two decimals, or why it is missing: the only way one is missing."""
    return NEEDS_JUDGES if value is None else f"{value:.2f}"


def agreement(summary: ConsensusSummary, thresholds: ThresholdSpec | None) -> str:
    """"0.799 (tentative agreement: 0.67 ≤ α < 0.80)": alpha printed so it cannot contradict
    its band, with the band's rule when the preset's cut-offs are known."""
    if summary.alpha is None:
        return NEEDS_JUDGES
    rule = band_rule(summary.band, thresholds) if thresholds is not None else ""
    words = band_words(summary.band) + (f": {rule}" if rule else "")
    return f"{alpha_text(summary.alpha, thresholds)} ({words})"


def incomplete_banner(result: DebateResult) -> Block:
    """"⚠ Incomplete: …" with the first gaps; the transcript has the rest."""
    items = [escape(m) for m in result.missing]
    if result.error and not any(result.error in m for m in result.missing):
        items.append(escape(result.error))
    detail = listing(items, 900, shown=3) if items else "the debate did not finish"
    return section(f"⚠ *Incomplete:* {detail}\n_A partial result: do not read it as final._")


def result_head(result: DebateResult, title: str) -> list[Block]:
    """Header, rehearsal and incomplete banners, the topic: never cut from a result message."""
    head = [header(title)]
    if result.rehearsal:
        head.append(rehearsal_banner())
    if is_incomplete(result):
        head.append(incomplete_banner(result))
    head.append(section("*Topic*\n" + quote(result.topic, 600)))
    if result.flagged:
        head.append(addressed_to_ai(result.injection, result.preset))
    return head


def verdict(result: DebateResult, limit: int = SECTION_TEXT_MAX) -> Block:
    return _verdict(result, limit)[0]


def _verdict(result: DebateResult, limit: int) -> tuple[Block, bool]:
    """The verdict section (a mode's verdict may be model text: the synthesis's conclusion),
    cut to `limit` characters; True when the verdict was shortened."""
    head = "*Verdict*" + (f" · {side_name(result.winner)}" if result.winner else "") + "\n"
    if not result.verdict:
        return section(head + "_No verdict._"), False
    said, cut = clip(result.verdict, limit - len(head))
    return section(head + said), cut


def band_of(result: DebateResult) -> str:
    """The band in words, or that the mode has no judge panel."""
    return "no judge panel" if result.consensus is None else band_words(result.consensus.band)


def verdict_words(result: DebateResult) -> str:
    """The verdict (escaped, on one line); the winning side when there is no verdict text."""
    if result.verdict.strip():
        return escape(" ".join(result.verdict.split()))
    return f"{side_name(result.winner)} wins" if result.winner else "no verdict"


def result_flags(result: DebateResult) -> list[Block]:
    """The degraded, filtered and refused steps of a result, with the reason each degraded and
    the words each refusal said."""
    degraded = [f"{d.get('key', '?')} ({d['reason']})" if d.get("reason") else d.get("key", "?")
                for d in result.degraded]
    refused = [f"{r.get('key', '?')}, which said: “{r.get('refusal', '')}”"
               for r in result.refused]
    return step_flags(degraded, result.filtered, refused)


def score(value: float) -> str:
    """A score on the 1-10 scale: "7", "6.5"."""
    return f"{round(value, 1):g}"


def _consensus_blocks(result: DebateResult, thresholds: ThresholdSpec | None) -> list[Block]:
    summary = result.consensus
    if summary is None:
        return []
    interval = interval_text(summary.alpha_interval)
    means = rubric_means(summary)
    judges = ", ".join(escape(j) for j in summary.judges)
    blocks = [fields([
        ("Agreement (Krippendorff's α)", agreement(summary, thresholds)),
        ("α 95% interval", interval), ("Agreement on calls (κ)", stat(summary.kappa)),
        ("Judges", f"{len(summary.judges)}" + (f" ({judges})" if judges else "")),
        (f"For ({means.name}, {SCALE})", "n/a" if means.pro is None else f"{means.pro:.1f}"),
        (f"Against ({means.name}, {SCALE})",
         "n/a" if means.con is None else f"{means.con:.1f}"),
    ])]
    if summary.irreconcilable:
        blocks.append(section("⚠ *Irreconcilable:* the judges' calls split; a person decides."))
    for note in summary.exclusion_notes[:4]:   # which judges did not score what, and why
        blocks.append(section(f"• {truncate(escape(note), 400)}"))
    return blocks


def point_line(label: str, point: DivergencePoint, *, with_ratings: bool) -> str:
    """"• label — mean 7.1, spread 0.4 (judge-a 7, judge-b 7.5)", on the 1-10 scale."""
    figures = point_figures(point)
    line = f"• {truncate(escape(label), 200)} — {figures.text}"
    if with_ratings and figures.ratings:
        scores = ", ".join(f"{escape(j)} {score(v)}" for j, v in list(figures.ratings.items())[:6])
        line += f" ({truncate(scores, 200)})"
    return line


def _divergence_blocks(result: DebateResult) -> list[Block]:
    blocks = []
    agreements = result.divergence.agreements[:5]
    if agreements:
        lines = [point_line(p.label or p.item, p, with_ratings=False) for p in agreements]
        blocks.append(section("*Where the judges agree*\n" + "\n".join(lines)))
    disagreements = result.divergence.disagreements[:3]
    if disagreements:
        lines = [point_line(p.label or p.item, p, with_ratings=True) for p in disagreements]
        blocks.append(section("*Where they disagree most*\n" + "\n".join(lines)))
    return blocks


def _value_text(value: Any, limit: int = OUTCOME_VALUE_MAX) -> str:
    return _value_clip(value, limit)[0]


def _value_clip(value: Any, limit: int = OUTCOME_VALUE_MAX) -> tuple[str, bool]:
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return clip(str(value), limit)


def _outcome_blocks(result: DebateResult) -> tuple[list[Block], bool]:
    """The mode's outcome as fields (six at most, each value shortened); True when any was cut."""
    outcome = result.outcome_details()
    blocks, cut = [], False
    rubric = outcome.pop("rubric", None)
    if isinstance(rubric, dict) and rubric:
        pairs = []
        for side, scores in list(rubric.items())[:FIELDS_MAX]:
            value = (" · ".join(f"{escape(str(k))} {_value_text(v, 20)}"
                                for k, v in scores.items())
                     if isinstance(scores, dict) else _value_text(scores))
            pairs.append((f"Rubric — {side_name(str(side))}", value))
        blocks.append(fields(pairs))
    if outcome:
        keys = list(outcome)[:6]
        pairs = []
        for k in keys:
            value, shortened = _value_clip(outcome[k])
            cut = cut or shortened
            pairs.append((truncate(escape(str(k)), 100), value))
        blocks.append(fields(pairs))
        if len(outcome) > len(keys):
            blocks.append(context([f"+{len(outcome) - len(keys)} more in the transcript"]))
    return blocks, cut


def _rationale_blocks(result: DebateResult,
                      pieces: int = RATIONALE_PIECES) -> tuple[list[Block], bool]:
    """The rationale in up to `pieces` sections; True (and an ellipsis) when more was left out."""
    if not result.rationale:
        return [], False
    parts = chunk(escape(result.rationale), SECTION_TEXT_MAX - 100)
    cut = len(parts) > pieces
    parts = parts[:pieces]
    if cut:
        parts[-1] += " " + ELLIPSIS
    blocks = [section(("*Rationale*\n" if i == 0 else "") + part) for i, part in enumerate(parts)]
    return blocks, cut


def _cost_line(result: DebateResult) -> Block:
    cost = result.cost
    reused = f" ({cost.reused_calls} reused)" if cost.reused_calls else ""
    parts = [f"Cost {usd(cost.usd)}", token_summary(cost), f"{cost.calls} calls{reused}",
             f"took {duration(result.elapsed_seconds)}"]
    if result.evidence:
        parts.append(f"{len(result.evidence)} evidence note(s) from the thread")
    return context([" · ".join(parts)])


def divergence_summary(result: DebateResult, *, transcript_url: str,
                       thresholds: ThresholdSpec | None = None,
                       actions: Sequence[Block] = ()) -> Message:
    """The final result: verdict, agreement statistics, where judges agree and split, cost.

    `thresholds` are the preset's alpha cut-offs (`results.thresholds_for`); with them the
    band's rule is printed beside alpha."""
    title = "Debate result (incomplete)" if is_incomplete(result) else "Debate result"
    head = result_head(result, title)
    said, verdict_cut = _verdict(result, VERDICT_MAX)
    outcome, outcome_cut = _outcome_blocks(result)
    rationale, rationale_cut = _rationale_blocks(result)
    body = [said, *result_flags(result), *_consensus_blocks(result, thresholds)]
    body += [*preset_blocks(result, _divergence_blocks(result)), *outcome]
    body += [section(f"*Routing:* {routing_words(result.routing)}"), *rationale]
    if verdict_cut or outcome_cut or rationale_cut:
        body.append(truncation_notice(transcript_url))
    tail = [_cost_line(result), links(transcript_url, result.id), *actions]  # never cut
    prefix = ("[Rehearsal] " if result.rehearsal else "") + (
        "[Incomplete] " if is_incomplete(result) else "")
    text = f"{prefix}Debate result: {escape(result.topic)} — {escape(result.verdict)}"
    return message(text, head, body, tail, transcript_url)


__all__ = [
    "addressed_to_ai",
    "agreement",
    "band_of",
    "debate_started",
    "divergence_summary",
    "incomplete_banner",
    "phase_mark",
    "phase_reply",
    "point_line",
    "result_flags",
    "result_head",
    "stat",
    "status",
    "step_flags",
    "verdict",
    "verdict_words",
]
