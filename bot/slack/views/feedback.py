"""Feedback on a result: 👍 / 👎 (Slack's `feedback_buttons` in a `context_actions` block) and a
"Why?" button opening a short form; what the reader is told after. Pure functions over values.

Each button carries only "<rating>:<debate id>" (the "Why?" button the debate id): the listener
checks the id against the stored debates, so a forged value stores nothing.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextActionsBlock,
    FeedbackButtonObject,
    FeedbackButtonsElement,
    InputBlock,
    Option,
    PlainTextInputElement,
    RadioButtonsElement,
)
from slack_sdk.models.views import View

from bot.slack.views.common import Block, Message, context, section
from engine.oversight.feedback import RATINGS, Rating

FEEDBACK_BLOCK = "result_feedback"
FEEDBACK_ACTION = "result_feedback"
WHY_BLOCK = "result_feedback_why"
WHY_ACTION = "result_feedback_why"
WHY_MODAL = "result_feedback_why_modal"
REASON_BLOCK, REASON_ACTION = "feedback_reason", "feedback_reason_input"
RATING_BLOCK, RATING_ACTION = "feedback_rating", "feedback_rating_choice"
RATING_WORDS: dict[str, str] = {"up": "👍 Helpful", "down": "👎 Not helpful"}


def feedback_value(rating: Rating, debate_id: str) -> str:
    return f"{rating}:{debate_id}"


def rating_of(value: str) -> Rating | None:
    return next((r for r in RATINGS if r == value), None)


def parse_value(value: str) -> tuple[Rating, str] | None:
    """(rating, debate id) from a feedback button's value; None for anything else."""
    rating, _, debate_id = value.partition(":")
    found = rating_of(rating)
    return (found, debate_id) if found is not None and debate_id else None


def feedback_blocks(debate_id: str) -> list[Block]:
    """👍 / 👎 and "Why?" under a result."""
    thumbs = FeedbackButtonsElement(
        action_id=FEEDBACK_ACTION,
        positive_button=FeedbackButtonObject(text="👍", value=feedback_value("up", debate_id),
                                             accessibility_label="This result helped"),
        negative_button=FeedbackButtonObject(text="👎", value=feedback_value("down", debate_id),
                                             accessibility_label="This result did not help"))
    why = ButtonElement(text="Why?", action_id=WHY_ACTION, value=debate_id)
    return [ContextActionsBlock(block_id=FEEDBACK_BLOCK, elements=[thumbs]).to_dict(),
            ActionsBlock(block_id=WHY_BLOCK, elements=[why]).to_dict()]


def why_modal(debate_id: str, *, max_reason: int) -> dict[str, Any]:
    """A short form: the reason (required, bounded) and, optionally, a thumb with it."""
    reason = PlainTextInputElement(action_id=REASON_ACTION, multiline=True,
                                   max_length=max_reason,
                                   placeholder="What made this result useful, or not?")
    rating = RadioButtonsElement(action_id=RATING_ACTION, options=[
        Option(value=value, text=text) for value, text in RATING_WORDS.items()])
    view = View(
        type="modal", callback_id=WHY_MODAL, title="Feedback on a result", submit="Send",
        close="Cancel", private_metadata=debate_id,
        blocks=[
            section("Your feedback is recorded (and audited) beside the reviewers' decisions, "
                    "not as one of them."),
            InputBlock(block_id=REASON_BLOCK, label="Why?", element=reason),
            InputBlock(block_id=RATING_BLOCK, label="Your rating", element=rating,
                       optional=True, hint="Replaces any 👍 / 👎 you gave this result."),
        ])
    return view.to_dict()


def thanks(rating: Rating | None, previous: Rating | None, *, rehearsal: bool) -> Message:
    """The ephemeral acknowledgement of a press or a reason."""
    said = "Thanks — recorded."
    if rating is not None and previous is not None and previous != rating:
        said = f"Thanks — recorded: {RATING_WORDS[rating]} replaces your {RATING_WORDS[previous]}."
    elif rating is not None and previous == rating:
        said = "Thanks — recorded (you had already said so; it counts once)."
    blocks = [section(said)]
    if rehearsal:
        blocks.append(context(["Rehearsal result: your feedback is kept apart and not counted "
                               "with real results."]))
    return Message(said, blocks)


def thanks_view(said: Message) -> dict[str, Any]:
    """The "Why?" form turned into its acknowledgement."""
    view = View(type="modal", callback_id=WHY_MODAL + "_done", title="Feedback recorded",
                close="Close", blocks=said.blocks)
    return view.to_dict()


def unknown_result() -> Message:
    said = "⚠ I cannot find that result; nothing was recorded."
    return Message(said, [section(said)])


__all__ = [
    "FEEDBACK_ACTION",
    "RATING_ACTION",
    "RATING_BLOCK",
    "REASON_ACTION",
    "REASON_BLOCK",
    "WHY_ACTION",
    "WHY_MODAL",
    "feedback_blocks",
    "parse_value",
    "rating_of",
    "thanks",
    "thanks_view",
    "unknown_result",
    "why_modal",
]
