"""Human review: the request with Approve / Escalate / Re-run, the request once decided, and the
modal that asks why a reviewer escalates. Buttons carry only the opaque review id.

The interactive ids here are what the listeners match on (`APPROVE_ACTION`, ...).
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    InputBlock,
    Option,
    PlainTextInputElement,
    RadioButtonsElement,
)
from slack_sdk.models.views import View

from bot.slack.mrkdwn import date_fmt, escape, truncate, user
from bot.slack.views.common import (
    Block,
    Message,
    context,
    links,
    message,
    routing_words,
    section,
)
from bot.slack.views.debate import agreement, result_flags, result_head, stat, verdict
from engine.domain import DebateResult
from engine.settings import ThresholdSpec
from storage.records import Review, ReviewStatus

APPROVE_ACTION = "review_approve"
ESCALATE_ACTION = "review_escalate"
RERUN_ACTION = "review_rerun"
REVIEW_ACTIONS_BLOCK = "review_actions"
ESCALATE_MODAL = "review_escalate_modal"
REASON_BLOCK, REASON_ACTION = "reason", "reason_input"
ABOUT_BLOCK, ABOUT_ACTION = "about", "about_input"
ABOUT_CHOICES = {"verdict": "The verdict is wrong",
                 "process": "The run itself is broken (a failed step, a bad source)"}


SPOT_CHECK_NOTE = ("🎯 *Spot check.* This result was published without a reviewer; a random "
                   "sample of published results is reviewed so routing's precision is measured. "
                   "Approve if it should stand; escalate or re-run if it should not have been "
                   "published.")


def _review_body(review: Review, result: DebateResult,
                 thresholds: ThresholdSpec | None) -> list[Block]:
    reason = escape(review.reason) if review.reason else "the routing policy asks for a person"
    summary = result.consensus
    stats = [f"Routing: {routing_words(result.routing)}"]
    if summary is not None:
        stats.insert(0, f"α {agreement(summary, thresholds)} · κ {stat(summary.kappa)}")
    why = (section(SPOT_CHECK_NOTE) if review.spot_check
           else section(truncate(f"*Why it needs a review:* {reason}", 1500)))
    notes = summary.exclusion_notes[:4] if summary is not None else []
    excluded = [context([truncate(escape(n), 400) for n in notes])] if notes else []
    return [verdict(result, 1200), why, context([" · ".join(stats)]), *excluded,
            *result_flags(result)]


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
                   thread_link: str | None, thresholds: ThresholdSpec | None = None) -> Message:
    """Asks a reviewer to approve, escalate or re-run a routed result."""
    kind = "Spot check requested" if review.spot_check else "Review requested"
    head = result_head(result, kind)
    tail = [links(transcript_url, result.id, thread_link), review_buttons(review.id)]
    prefix = "[Rehearsal] " if result.rehearsal else ""
    text = f"{prefix}{kind}: {escape(result.topic)}"
    return message(text, head, _review_body(review, result, thresholds), tail, transcript_url)


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


def review_decided(review: Review, result: DebateResult, *, transcript_url: str,
                   thresholds: ThresholdSpec | None = None) -> Message:
    """The review request once decided: the buttons give way to who decided what, and when."""
    head = result_head(result, "Spot check decided" if review.spot_check else "Review decided")
    tail = [links(transcript_url, result.id), section(decision_line(review))]
    words = {ReviewStatus.APPROVED: "approved", ReviewStatus.ESCALATED: "escalated",
             ReviewStatus.RERUN: "sent back for a re-run"}.get(review.status, "pending")
    text = f"Review {words}: {escape(result.topic)}"
    return message(text, head, _review_body(review, result, thresholds), tail, transcript_url)


def escalate_modal(review_id: str) -> dict[str, Any]:
    """Asks the reviewer why they escalate; the review id rides in `private_metadata`."""
    reason = PlainTextInputElement(action_id=REASON_ACTION, multiline=True, max_length=2000,
                                   placeholder="What is wrong with this result?")
    about = RadioButtonsElement(action_id=ABOUT_ACTION, options=[
        Option(value=value, text=text) for value, text in ABOUT_CHOICES.items()])
    view = View(
        type="modal", callback_id=ESCALATE_MODAL, title="Escalate review",
        submit="Escalate", close="Cancel", private_metadata=review_id,
        blocks=[
            section("The reason is recorded in the audit log and posted in the debate's thread."),
            InputBlock(block_id=REASON_BLOCK, label="Reason", element=reason),
            InputBlock(block_id=ABOUT_BLOCK, label="What is wrong", element=about,
                       optional=True, hint="A wrong verdict teaches the judge audit and the "
                       "routing thresholds; a broken run does not."),
        ],
    )
    return view.to_dict()


__all__ = [
    "ABOUT_ACTION",
    "ABOUT_BLOCK",
    "APPROVE_ACTION",
    "ESCALATE_ACTION",
    "ESCALATE_MODAL",
    "REASON_ACTION",
    "REASON_BLOCK",
    "RERUN_ACTION",
    "REVIEW_ACTIONS_BLOCK",
    "decision_line",
    "escalate_modal",
    "review_buttons",
    "review_decided",
    "review_request",
]
