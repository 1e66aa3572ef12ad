"""Block Kit renderers for every message, modal and Home tab the bot shows; pure functions.

Each renderer returns a `Message` (blocks plus the escaped top-level `text` Slack needs for
notifications) or a view dict. Model and user text always goes through `mrkdwn.escape`, and
every message is fitted to Slack's limits: long content is cut, with a pointer to the full
transcript, while headers, warnings ("Incomplete", "Rehearsal") and buttons are kept.

Interactive ids the listeners rely on are the module constants (`APPROVE_ACTION`, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from bot.service.results import is_incomplete
from bot.slack.mrkdwn import channel, chunk, date_fmt, escape, is_web_url, link, truncate, user
from engine.domain import DebateResult, Estimate, PhaseSummary
from storage.records import DebateRecord, DebateStatus, Review, ReviewStatus

Block = dict[str, Any]

# --- Slack's limits (SLACK.md); MAX_BLOCKS_CHARS keeps a margin below msg_blocks_too_long ---
SECTION_TEXT_MAX = 3000
FIELD_TEXT_MAX = 2000
FIELDS_MAX = 10
HEADER_MAX = 150
CONTEXT_ELEMENTS_MAX = 10
MAX_BLOCKS = 50
MAX_BLOCKS_CHARS = 12_000
HOME_MAX_BLOCKS = 100
TEXT_MAX = 3000
OPTIONS_MAX = 100

# --- ids the interactive listeners match on ---
APPROVE_ACTION = "review_approve"
ESCALATE_ACTION = "review_escalate"
RERUN_ACTION = "review_rerun"
REVIEW_ACTIONS_BLOCK = "review_actions"
ESCALATE_MODAL = "review_escalate_modal"
REASON_BLOCK, REASON_ACTION = "reason", "reason_input"
DEBATE_MODAL = "debate_modal"
TOPIC_BLOCK, TOPIC_ACTION = "topic", "topic_input"
MODE_BLOCK, MODE_ACTION = "mode", "mode_select"
PRESET_BLOCK, PRESET_ACTION = "preset", "preset_select"
JUDGES_BLOCK, JUDGES_ACTION = "judges", "judges_select"
JUDGE_CHOICES = (2, 3, 4, 5, 6)
TOPIC_MAX = 4000

REHEARSAL_NOTE = "Rehearsal: offline placeholder model, not a real debate"
SIDE_NAMES = {"pro": "For", "con": "Against", "tie": "Tie"}
BAND_WORDS = {
    "high": "high agreement",
    "tentative": "tentative agreement",
    "review": "needs review",
    "contentious": "contentious",
}
ROUTING_WORDS = {
    "auto_approve": "published automatically: the judges agree",
    "tentative": "published as tentative: the judges mostly agree",
    "human_review": "sent to a reviewer before it counts",
    "escalate": "escalated: the judges disagree too much to publish",
    "none": "no review routing for this mode",
}
STATUS_WORDS = {
    DebateStatus.CREATED: ("⏳", "Queued"),
    DebateStatus.QUEUED: ("⏳", "Queued"),
    DebateStatus.DEBATING: ("💬", "Debating"),
    DebateStatus.JUDGING: ("⚖️", "Judging"),
    DebateStatus.COMPLETED: ("✅", "Finished"),
    DebateStatus.FAILED: ("❌", "Failed"),
    DebateStatus.TIMED_OUT: ("⌛", "Timed out"),
    DebateStatus.AWAITING_REVIEW: ("👀", "Awaiting review"),
    DebateStatus.APPROVED: ("✅", "Approved"),
    DebateStatus.ESCALATED: ("⛔", "Escalated"),
}


@dataclass(frozen=True, slots=True)
class Message:
    """A message ready for chat.postMessage / chat.update / respond: fallback text and blocks."""

    text: str
    blocks: list[Block]

    def kwargs(self) -> dict[str, Any]:
        """`text` and `blocks` as keyword arguments for the Web API client."""
        return {"text": self.text, "blocks": self.blocks}


# --------------------------------------------------------------------------------------------
# formatting


def usd(amount: float) -> str:
    """Dollars with enough digits to tell small debates apart ("$0.0734", "$0.50", "$4.20")."""
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    digits = f"{amount:.4f}"
    while digits.endswith("0") and len(digits.split(".")[1]) > 2:
        digits = digits[:-1]
    return f"${digits}"


def duration(seconds: float) -> str:
    """A short human duration: "42s", "3m 05s", "1h 02m"."""
    total = max(0, round(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {total % 3600 // 60:02d}m"


def side_name(side: str) -> str:
    """"pro" -> "For", "con" -> "Against"; any other role as its (escaped) name."""
    return SIDE_NAMES.get(side, escape(side))


def progress_bar(done: int, total: int, *, width: int = 20) -> str:
    """`▰▰▰▱▱ 3/5`; at most `width` cells so long plans stay on one line."""
    total = max(total, done, 0)
    if total == 0:
        return "▱ 0/0"
    cells = min(total, width)
    filled = round(done / total * cells)
    return "▰" * filled + "▱" * (cells - filled) + f" {done}/{total}"


def _stat(value: float | None) -> str:
    """A statistic with two decimals, or "n/a (needs 2+ judges)": the only way one is missing."""
    return "n/a (needs 2+ judges)" if value is None else f"{value:.2f}"


def _quote(text: str, limit: int) -> str:
    """Escaped text as a mrkdwn block quote, cut to `limit` characters."""
    return truncate("> " + escape(text.strip()).replace("\n", "\n> "), limit)


def _listing(items: Sequence[str], limit: int, *, shown: int = 5) -> str:
    """`a; b; c (+4 more)` over already-escaped items, cut to `limit` characters."""
    head = "; ".join(items[:shown])
    more = f" (+{len(items) - shown} more)" if len(items) > shown else ""
    return truncate(head, max(1, limit - len(more))) + more


# --------------------------------------------------------------------------------------------
# blocks (dicts, built and validated by slack_sdk.models)


def section(text: str) -> Block:
    """A mrkdwn section; `text` must already be escaped. Cut to 3000 characters."""
    block = SectionBlock(text=MarkdownTextObject(text=truncate(text or " ", SECTION_TEXT_MAX)))
    return block.to_dict()


def fields(pairs: Iterable[tuple[str, str]]) -> Block:
    """A section of up to 10 "*label*\\nvalue" fields (values already escaped), 2000 chars each."""
    items = [MarkdownTextObject(text=truncate(f"*{label}*\n{value or ' '}", FIELD_TEXT_MAX))
             for label, value in list(pairs)[:FIELDS_MAX]]
    return SectionBlock(fields=items).to_dict()


def header(text: str) -> Block:
    """A header: plain text, so only the bot's own wording goes here, never model output."""
    return HeaderBlock(text=PlainTextObject(text=truncate(text, HEADER_MAX), emoji=True)).to_dict()


def context(parts: Iterable[str]) -> Block:
    """A context line of up to 10 mrkdwn elements (already escaped)."""
    elements = [MarkdownTextObject(text=truncate(p, SECTION_TEXT_MAX)) for p in parts if p]
    return ContextBlock(elements=elements[:CONTEXT_ELEMENTS_MAX] or [
        MarkdownTextObject(text=" ")]).to_dict()


def divider() -> Block:
    return DividerBlock().to_dict()


def rehearsal_banner() -> Block:
    return section(f"🧪 *{REHEARSAL_NOTE}.* Nothing here came from a real model.")


def _fallback(text: str) -> str:
    return truncate(text, TEXT_MAX)


# --------------------------------------------------------------------------------------------
# fitting a message to the limits


def _size(blocks: Sequence[Block]) -> int:
    return len(json.dumps(blocks))


def _shrink(block: Block, budget: int) -> Block | None:
    """The section with its text cut so its JSON takes <= `budget` chars; None if too little."""
    text = block.get("text", {}).get("text") if block.get("type") == "section" else None
    if not text or "fields" in block or "accessory" in block:
        return None
    low, high, best = 80, len(text), None
    while low <= high:
        middle = (low + high) // 2
        candidate = {**block, "text": {**block["text"], "text": truncate(text, middle)}}
        if len(json.dumps(candidate)) <= budget:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def truncation_notice(transcript_url: str | None) -> Block:
    """The line that says content was cut and where the rest is."""
    if transcript_url and is_web_url(transcript_url):
        return context([f"… (truncated — full transcript: {link(transcript_url, transcript_url)})"])
    return context(["… (truncated — the full transcript is in the web console)"])


def fit(head: Sequence[Block], body: Sequence[Block], tail: Sequence[Block], *,
        transcript_url: str | None, max_blocks: int = MAX_BLOCKS,
        max_chars: int = MAX_BLOCKS_CHARS) -> list[Block]:
    """`head + body + tail`, cutting `body` (never head or tail: banners, buttons) to the limits.

    When anything is cut, a truncation notice pointing at the transcript closes the body.
    """
    blocks = [*head, *body, *tail]
    if len(blocks) <= max_blocks and _size(blocks) <= max_chars:
        return blocks
    notice = truncation_notice(transcript_url)
    room_blocks = max_blocks - len(head) - len(tail) - 1
    room_chars = max_chars - _size([*head, notice, *tail])
    kept: list[Block] = []
    for block in body:
        if len(kept) >= room_blocks:
            break
        cost = len(json.dumps(block)) + 2  # ", " between list items
        if cost <= room_chars:
            kept.append(block)
            room_chars -= cost
            continue
        shrunk = _shrink(block, room_chars - 2)
        if shrunk is not None:
            kept.append(shrunk)
        break
    return [*head, *kept, notice, *tail]


def _message(text: str, head: Sequence[Block], body: Sequence[Block], tail: Sequence[Block],
             transcript_url: str | None = None) -> Message:
    return Message(_fallback(text), fit(head, body, tail, transcript_url=transcript_url))


def _links(transcript_url: str | None, debate_id: str, thread_link: str | None = None) -> Block:
    parts = []
    if thread_link and is_web_url(thread_link):
        parts.append(link(thread_link, "Debate thread"))
    if transcript_url and is_web_url(transcript_url):
        parts.append(link(transcript_url, "Full transcript"))
    parts.append(f"debate `{escape(debate_id)}`")
    return context([" · ".join(parts)])


# --------------------------------------------------------------------------------------------
# debate lifecycle: started, status, phase replies


def _started_fields(record: DebateRecord, estimate: Estimate | None) -> list[tuple[str, str]]:
    mode = escape(record.mode)
    if record.downgraded_from:
        mode += f" (downgraded from {escape(record.downgraded_from)} to fit the budget)"
    judges = str(record.request.judges) if record.request.judges else "preset default"
    cost = "n/a"
    if estimate is not None:
        cost = f"~{estimate.calls} calls · ~{usd(estimate.usd)}"
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
    head.append(section("*Topic*\n" + _quote(record.request.topic, 2500)))
    body = [fields(_started_fields(record, estimate))]
    if record.request.context:
        body.append(context(["Includes context from the conversation it was started in."]))
    tail = [context(["Progress and highlights follow in this thread."]),
            _links(transcript_url, record.id)]
    prefix = "[Rehearsal] " if rehearsal else ""
    text = f"{prefix}Debate started: {escape(record.request.topic)}"
    return _message(text, head, body, tail, transcript_url)


def _phase_checklist(phase: str, done: list[str], planned: list[str]) -> str:
    marks = []
    for name in planned:
        if name in done:
            marks.append(f"✓ {escape(name)}")
        elif name == phase:
            marks.append(f"▸ *{escape(name)}*")
        else:
            marks.append(f"· {escape(name)}")
    return "  ".join(marks)


def status(record: DebateRecord, *, phase: str, done_phases: list[str],
           planned_phases: list[str], cost_usd: float, rehearsal: bool,
           transcript_url: str | None = None) -> Message:
    """The one status message kept current with chat.update: progress, phase, cost so far."""
    emoji, word = STATUS_WORDS.get(record.status, ("⏳", escape(str(record.status))))
    finished = {p for p in done_phases if p in planned_phases or not planned_phases}
    done = len(finished)
    bar = progress_bar(done, len(planned_phases) or done)
    lines = [f"{emoji} *{word}*  {bar}", f"Phase: *{escape(phase) or '—'}* · "
             f"Cost so far: {usd(cost_usd)}"]
    if record.status in (DebateStatus.FAILED, DebateStatus.TIMED_OUT) and record.error:
        lines.append(f"⚠ {truncate(escape(record.error), 600)}")
    head = [rehearsal_banner()] if rehearsal else []
    head.append(section("\n".join(lines)))
    body = []
    if planned_phases:
        body.append(context([_phase_checklist(phase, done_phases, planned_phases)]))
    tail = [_links(transcript_url, record.id)] if transcript_url else []
    prefix = "[Rehearsal] " if rehearsal else ""
    text = f"{prefix}Debate {word.lower()}: {bar} — {escape(phase)}"
    return _message(text, head, body, tail, transcript_url)


def _ordered_sides(highlights: Mapping[str, str]) -> list[str]:
    known = [s for s in ("pro", "con") if s in highlights]
    return known + [s for s in highlights if s not in known]


def step_flags(degraded: Sequence[str], filtered: Sequence[str]) -> list[Block]:
    """Warnings for steps a placeholder stood in for, or the provider's filter withheld."""
    blocks = []
    if degraded:
        keys = _listing([escape(k) for k in degraded], 1200, shown=8)
        blocks.append(section(f"⚠ degraded: {keys} — a placeholder stood in for these steps."))
    if filtered:
        keys = _listing([escape(k) for k in filtered], 1200, shown=8)
        blocks.append(section(f"⚠ filtered by the provider's content filter: {keys}"))
    return blocks


def phase_reply(summary: PhaseSummary, *, rehearsal: bool,
                transcript_url: str | None = None) -> Message:
    """A thread reply for a finished phase: each side's strongest point, and any gaps."""
    head = [rehearsal_banner()] if rehearsal else []
    took = f" ({duration(summary.elapsed_seconds)})" if summary.elapsed_seconds else ""
    head.append(section(f"*Phase finished: {escape(summary.name)}*{took}"))
    head += step_flags(summary.degraded, summary.filtered)
    body = [section(f"*{side_name(side)}*\n{escape(summary.highlights[side])}")
            for side in _ordered_sides(summary.highlights) if summary.highlights[side]]
    if not body:
        body = [context(["No highlights were recorded for this phase."])]
    prefix = "[Rehearsal] " if rehearsal else ""
    flags = " (with degraded steps)" if summary.degraded or summary.filtered else ""
    text = f"{prefix}Phase {escape(summary.name)} finished{flags}"
    return _message(text, head, body, [], transcript_url)


# --------------------------------------------------------------------------------------------
# results


def incomplete_banner(result: DebateResult) -> Block:
    """"⚠ Incomplete: …" with the first gaps; the transcript has the rest."""
    items = [escape(m) for m in result.missing]
    if result.error and not any(result.error in m for m in result.missing):
        items.append(escape(result.error))
    detail = _listing(items, 900, shown=3) if items else "the debate did not finish"
    return section(f"⚠ *Incomplete:* {detail}\n_A partial result: do not read it as final._")


def _result_head(result: DebateResult, title: str) -> list[Block]:
    head = [header(title)]
    if result.rehearsal:
        head.append(rehearsal_banner())
    if is_incomplete(result):
        head.append(incomplete_banner(result))
    head.append(section("*Topic*\n" + _quote(result.topic, 600)))
    return head


def _verdict(result: DebateResult, limit: int = SECTION_TEXT_MAX) -> Block:
    winner = f" · {side_name(result.winner)}" if result.winner else ""
    verdict = escape(result.verdict) if result.verdict else "_No verdict._"
    return section(truncate(f"*Verdict*{winner}\n{verdict}", limit))


def side_means(weighted: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mean of each side's weighted scores ("pro.*", "con.*"), None when it has none."""
    means: dict[str, float | None] = {}
    for side in ("pro", "con"):
        values = [v for k, v in weighted.items() if k.startswith(f"{side}.") and v is not None]
        means[side] = sum(values) / len(values) if values else None
    return means


def _consensus_blocks(result: DebateResult) -> list[Block]:
    summary = result.consensus
    if summary is None:
        return []
    band = BAND_WORDS.get(summary.band, escape(summary.band))
    alpha = _stat(summary.alpha) + (f" ({band})" if summary.alpha is not None else "")
    interval = "n/a"
    if summary.alpha_interval is not None:
        interval = f"{summary.alpha_interval[0]:.2f} – {summary.alpha_interval[1]:.2f}"
    means = side_means(summary.weighted_scores)
    judges = ", ".join(escape(j) for j in summary.judges)
    blocks = [fields([
        ("Agreement (Krippendorff's α)", alpha), ("α 95% interval", interval),
        ("Agreement on calls (κ)", _stat(summary.kappa)),
        ("Judges", f"{len(summary.judges)}" + (f" ({judges})" if judges else "")),
        ("For (weighted score)", "n/a" if means["pro"] is None else f"{means['pro']:.2f}"),
        ("Against (weighted score)", "n/a" if means["con"] is None else f"{means['con']:.2f}"),
    ])]
    if summary.irreconcilable:
        blocks.append(section("⚠ *Irreconcilable:* the judges' calls split; a person decides."))
    return blocks


def _point_line(label: str, mean: float, spread: float, ratings: Mapping[str, float]) -> str:
    line = f"• {truncate(escape(label), 200)} — mean {mean:.1f}, spread {spread:.1f}"
    if ratings:
        scores = ", ".join(f"{escape(j)} {v:g}" for j, v in list(ratings.items())[:6])
        line += f" ({truncate(scores, 200)})"
    return line


def _divergence_blocks(result: DebateResult) -> list[Block]:
    blocks = []
    agreements = result.divergence.agreements[:5]
    if agreements:
        lines = [_point_line(p.label or p.item, p.mean, p.spread, {}) for p in agreements]
        blocks.append(section("*Where the judges agree*\n" + "\n".join(lines)))
    disagreements = result.divergence.disagreements[:3]
    if disagreements:
        lines = [_point_line(p.label or p.item, p.mean, p.spread, p.ratings)
                 for p in disagreements]
        blocks.append(section("*Where they disagree most*\n" + "\n".join(lines)))
    return blocks


def _value_text(value: Any, limit: int = 300) -> str:
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return truncate(escape(str(value)), limit)


def _outcome_blocks(result: DebateResult) -> list[Block]:
    outcome = result.outcome_details()
    blocks = []
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
        pairs = [(truncate(escape(str(k)), 100), _value_text(outcome[k])) for k in keys]
        blocks.append(fields(pairs))
        if len(outcome) > len(keys):
            blocks.append(context([f"+{len(outcome) - len(keys)} more in the transcript"]))
    return blocks


def _rationale_blocks(result: DebateResult, pieces: int = 2) -> list[Block]:
    if not result.rationale:
        return []
    parts = chunk(escape(result.rationale), SECTION_TEXT_MAX - 100)[:pieces]
    return [section(("*Rationale*\n" if i == 0 else "") + part) for i, part in enumerate(parts)]


def _result_flags(result: DebateResult) -> list[Block]:
    degraded = [f"{d.get('key', '?')} ({d['reason']})" if d.get("reason") else d.get("key", "?")
                for d in result.degraded]
    return step_flags(degraded, result.filtered)


def _cost_line(result: DebateResult) -> Block:
    cost = result.cost
    tokens = cost.prompt_tokens + cost.completion_tokens
    reused = f" ({cost.reused_calls} reused)" if cost.reused_calls else ""
    parts = [f"Cost {usd(cost.usd)}", f"{tokens:,} tokens", f"{cost.calls} calls{reused}",
             f"took {duration(result.elapsed_seconds)}"]
    if result.evidence:
        parts.append(f"{len(result.evidence)} evidence note(s) from the thread")
    return context([" · ".join(parts)])


def _routing_line(routing: str) -> Block:
    return section(f"*Routing:* {ROUTING_WORDS.get(routing, escape(routing))}")


def divergence_summary(result: DebateResult, *, transcript_url: str) -> Message:
    """The final result: verdict, agreement statistics, where judges agree and split, cost."""
    title = "Debate result (incomplete)" if is_incomplete(result) else "Debate result"
    head = _result_head(result, title)
    body = [_verdict(result), *_result_flags(result), *_consensus_blocks(result)]
    body += [*_divergence_blocks(result), *_outcome_blocks(result)]
    body += [_routing_line(result.routing), *_rationale_blocks(result)]
    tail = [_cost_line(result), _links(transcript_url, result.id)]
    prefix = ("[Rehearsal] " if result.rehearsal else "") + (
        "[Incomplete] " if is_incomplete(result) else "")
    text = f"{prefix}Debate result: {escape(result.topic)} — {escape(result.verdict)}"
    return _message(text, head, body, tail, transcript_url)


# --------------------------------------------------------------------------------------------
# human review


def _review_body(review: Review, result: DebateResult) -> list[Block]:
    reason = escape(review.reason) if review.reason else "the routing policy asks for a person"
    summary = result.consensus
    stats = [f"Routing: {ROUTING_WORDS.get(result.routing, escape(result.routing))}"]
    if summary is not None:
        band = BAND_WORDS.get(summary.band, escape(summary.band))
        stats.insert(0, f"α {_stat(summary.alpha)} ({band}) · κ {_stat(summary.kappa)}")
    return [_verdict(result, 1200), section(truncate(f"*Why it needs a review:* {reason}", 1500)),
            context([" · ".join(stats)]), *_result_flags(result)]


def review_buttons(review_id: str) -> Block:
    """Approve / Escalate / Re-run; each button carries only the opaque review id."""
    buttons = [
        ButtonElement(text="Approve", action_id=APPROVE_ACTION, value=review_id, style="primary"),
        ButtonElement(text="Escalate", action_id=ESCALATE_ACTION, value=review_id,
                      style="danger"),
        ButtonElement(text="Re-run", action_id=RERUN_ACTION, value=review_id),
    ]
    return ActionsBlock(block_id=REVIEW_ACTIONS_BLOCK, elements=buttons).to_dict()


def review_request(review: Review, result: DebateResult, *, transcript_url: str,
                   thread_link: str | None) -> Message:
    """Asks a reviewer to approve, escalate or re-run a routed result."""
    head = _result_head(result, "Review requested")
    tail = [_links(transcript_url, result.id, thread_link), review_buttons(review.id)]
    prefix = "[Rehearsal] " if result.rehearsal else ""
    text = f"{prefix}Review requested: {escape(result.topic)}"
    return _message(text, head, _review_body(review, result), tail, transcript_url)


def decision_line(review: Review) -> str:
    """"Approved by <@U> at <date>", "Escalated by … — reason: …", "Re-run requested by …"."""
    who = user(review.decided_by) if review.decided_by else "someone"
    when = f" at {date_fmt(review.decided_at)}" if review.decided_at else ""
    note = truncate(escape(review.decision_note), 1500)
    if review.status is ReviewStatus.APPROVED:
        return f"✅ Approved by {who}{when}" + (f" — note: {note}" if note else "")
    if review.status is ReviewStatus.ESCALATED:
        return f"⛔ Escalated by {who}{when} — reason: {note or 'none given'}"
    if review.status is ReviewStatus.RERUN:
        return f"🔁 Re-run requested by {who}{when}"
    return "⏳ Awaiting a reviewer's decision"


def review_decided(review: Review, result: DebateResult, *, transcript_url: str) -> Message:
    """The review request once decided: the buttons give way to who decided what, and when."""
    head = _result_head(result, "Review decided")
    tail = [_links(transcript_url, result.id), section(decision_line(review))]
    words = {ReviewStatus.APPROVED: "approved", ReviewStatus.ESCALATED: "escalated",
             ReviewStatus.RERUN: "sent back for a re-run"}.get(review.status, "pending")
    text = f"Review {words}: {escape(result.topic)}"
    return _message(text, head, _review_body(review, result), tail, transcript_url)


# --------------------------------------------------------------------------------------------
# modals


def escalate_modal(review_id: str) -> dict[str, Any]:
    """Asks the reviewer why they escalate; the review id rides in `private_metadata`."""
    reason = PlainTextInputElement(action_id=REASON_ACTION, multiline=True, max_length=2000,
                                   placeholder="What is wrong with this result?")
    view = View(
        type="modal", callback_id=ESCALATE_MODAL, title="Escalate review",
        submit="Escalate", close="Cancel", private_metadata=review_id,
        blocks=[
            section("The reason is recorded in the audit log and posted in the debate's thread."),
            InputBlock(block_id=REASON_BLOCK, label="Reason", element=reason),
        ],
    )
    return view.to_dict()


def _options(values: Sequence[str]) -> list[Option]:
    return [Option(value=v[:150], label=truncate(v, 75)) for v in values[:OPTIONS_MAX]]


def _select(block_id: str, action_id: str, label: str, values: Sequence[str],
            initial: str | None, *, optional: bool = False, hint: str | None = None) -> Block:
    options = _options(values)
    chosen = next((o for o in options if o.value == initial), options[0])
    element = StaticSelectElement(action_id=action_id, options=options, initial_option=chosen)
    return InputBlock(block_id=block_id, label=label, element=element, optional=optional,
                      hint=hint).to_dict()


def debate_modal(presets: list[str], modes: list[str], channel_id: str) -> dict[str, Any]:
    """The `/debate` modal: topic, mode, preset, judges; the channel rides in private_metadata."""
    topic = PlainTextInputElement(action_id=TOPIC_ACTION, multiline=True, max_length=TOPIC_MAX,
                                  placeholder="Should we move the monolith to services?")
    blocks: list[Block] = [InputBlock(block_id=TOPIC_BLOCK, label="Topic", element=topic,
                                      hint="A proposition two sides can argue.").to_dict()]
    if modes:
        blocks.append(_select(MODE_BLOCK, MODE_ACTION, "Mode", modes, "consensus"))
    if presets:
        blocks.append(_select(PRESET_BLOCK, PRESET_ACTION, "Preset", presets, "default"))
    blocks.append(_select(JUDGES_BLOCK, JUDGES_ACTION, "Judges", [str(n) for n in JUDGE_CHOICES],
                          "3", optional=True, hint="Panel size, for modes with a judge panel."))
    view = View(type="modal", callback_id=DEBATE_MODAL, title="Start a debate", submit="Start",
                close="Cancel", private_metadata=channel_id, blocks=blocks)
    return view.to_dict()


# --------------------------------------------------------------------------------------------
# help, errors, budget


def help_text(usage: str) -> Message:
    """How to use the bot (usage text is escaped like any other text)."""
    body = [section(part) for part in chunk(escape(usage), SECTION_TEXT_MAX)]
    return _message(escape(usage) or "Dialectic help", [header("Dialectic")], body, [])


def error(message: str, usage: str | None = None) -> Message:
    """What went wrong and what to do: fit for an ephemeral message or `respond()`."""
    head = [section(f"⚠ {escape(message)}")]
    body = [section(f"*Usage*\n{part}") for part in chunk(escape(usage), 2900)] if usage else []
    return _message(escape(message), head, body, [])


def _money(state: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = state.get(key)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _budget_figures(state: Mapping[str, Any]) -> dict[str, float | None]:
    spent = _money(state, "spent_usd", "spent") or 0.0
    cap = _money(state, "cap_usd", "daily_budget_usd", "cap")
    reserved = _money(state, "reserved_usd", "reserved") or 0.0
    remaining = _money(state, "remaining_usd", "remaining")
    if remaining is None and cap is not None:
        remaining = max(0.0, cap - spent - reserved)
    return {"spent": spent, "cap": cap, "reserved": reserved, "remaining": remaining}


def budget_blocks(state: Mapping[str, Any]) -> list[Block]:
    """Today's spend against the cap, what running debates reserve, and what is left."""
    f = _budget_figures(state)
    spent, cap = f["spent"] or 0.0, f["cap"]
    lines = []
    if cap:
        share = (spent + (f["reserved"] or 0.0)) / cap
        cells = min(10, round(share * 10))
        lines.append("▰" * cells + "▱" * (10 - cells) + f" {share:.0%} of today's cap")
        if share >= 1:
            lines.append("⛔ The cap is reached: new debates wait until tomorrow (UTC).")
        elif share >= 0.8:
            lines.append("⚠ Over 80% of today's cap is spent or reserved.")
    pairs = [("Spent today", usd(spent)), ("Daily cap", "none" if cap is None else usd(cap)),
             ("Reserved by running debates", usd(f["reserved"] or 0.0)),
             ("Remaining", "n/a" if f["remaining"] is None else usd(f["remaining"]))]
    blocks = [fields(pairs)]
    if lines:
        blocks.append(section("\n".join(lines)))
    return blocks


def budget(state: dict[str, Any]) -> Message:
    """Today's budget: keys `spent_usd`, `cap_usd`, `reserved_usd`, optional `remaining_usd`."""
    f = _budget_figures(state)
    cap = "no cap" if f["cap"] is None else f"{usd(f['cap'])} cap"
    text = f"Today's spend: {usd(f['spent'] or 0.0)} of {cap}"
    return _message(text, [header("Today's budget")], budget_blocks(state), [])


# --------------------------------------------------------------------------------------------
# App Home


def _recent_line(record: DebateRecord, url: str) -> Block:
    emoji, word = STATUS_WORDS.get(record.status, ("•", escape(str(record.status))))
    marks = []
    if record.result is not None and record.result.rehearsal:
        marks.append("🧪 rehearsal")
    if record.result is not None and is_incomplete(record.result):
        marks.append("⚠ incomplete")
    facts = [f"{emoji} {word}", escape(record.mode), escape(record.preset),
             usd(record.cost_usd), date_fmt(record.created_at), *marks]
    topic = truncate(escape(record.request.topic.replace("\n", " ")), 200)
    return section(f"*{topic}*\n" + " · ".join(facts) + f" · {link(url, 'transcript')}")


def _review_line(review: Review, topics: Mapping[str, str], url: str) -> Block:
    topic = topics.get(review.debate_id, f"debate {review.debate_id}")
    where = f" in {channel(review.channel_id)}" if review.channel_id else ""
    reason = truncate(escape(review.reason), 300) if review.reason else "routed for review"
    return section(f"*{truncate(escape(topic), 200)}*{where}\n{reason} · {link(url, 'transcript')}")


def app_home(recent: list[DebateRecord], budget: dict[str, Any], pending_reviews: list[Review],
             *, is_reviewer: bool, public_url: str,
             transcript_path: str = "/debates/{id}") -> dict[str, Any]:
    """The Home tab: how to start, today's budget, reviews waiting (for reviewers), recent debates.

    `transcript_path` is joined to `public_url` with the debate id to link each transcript.
    """
    def url(debate_id: str) -> str:
        return public_url.rstrip("/") + transcript_path.format(id=debate_id)

    console = link(public_url, "web console") if public_url else "web console"
    head = [header("Dialectic"),
            section(f"Start a debate with `/debate` in any channel, or from the {console}."),
            divider(), header("Today's budget"), *budget_blocks(budget)]
    reviews: list[Block] = []
    if is_reviewer and pending_reviews:
        topics = {r.id: r.request.topic for r in recent}
        reviews = [divider(), header(f"Waiting for review ({len(pending_reviews)})")]
        reviews += [_review_line(r, topics, url(r.debate_id)) for r in pending_reviews[:20]]
    elif pending_reviews:
        reviews = [context([f"{len(pending_reviews)} debate(s) wait for a reviewer."])]
    recents = [divider(), header("Recent debates")]
    recents += [_recent_line(r, url(r.id)) for r in recent] or [
        context(["No debates yet: try `/debate`."])]
    blocks = fit(head, [*reviews, *recents], [], transcript_url=public_url,
                 max_blocks=HOME_MAX_BLOCKS, max_chars=100_000)
    return View(type="home", blocks=blocks).to_dict()


__all__ = [
    "APPROVE_ACTION",
    "DEBATE_MODAL",
    "ESCALATE_ACTION",
    "ESCALATE_MODAL",
    "JUDGES_ACTION",
    "JUDGES_BLOCK",
    "MODE_ACTION",
    "MODE_BLOCK",
    "PRESET_ACTION",
    "PRESET_BLOCK",
    "REASON_ACTION",
    "REASON_BLOCK",
    "REHEARSAL_NOTE",
    "RERUN_ACTION",
    "REVIEW_ACTIONS_BLOCK",
    "TOPIC_ACTION",
    "TOPIC_BLOCK",
    "Message",
    "app_home",
    "budget",
    "debate_modal",
    "debate_started",
    "decision_line",
    "divergence_summary",
    "error",
    "escalate_modal",
    "fit",
    "help_text",
    "is_incomplete",
    "phase_reply",
    "review_decided",
    "review_request",
    "status",
]
